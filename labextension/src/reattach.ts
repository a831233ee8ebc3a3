/**
 * Re-attach: a page that did not send a waiting cell's request shows its approval panel
 * in that cell again (issue 44, Deliver 4).
 *
 * JupyterLab shows a request's outputs only in the page that sent it, so a page reloaded
 * while a cell waits for a click showed nothing in that cell. When a notebook's kernel
 * connects, this asks the kernel's side panel state (the same authenticated route as the
 * Skills tab) for its waiting questions; each names the cell that shows it (the `cellId`
 * JupyterLab sent with the request, the request's msg_id, the panel's display id and widget
 * model id: skill_magics/notebook/approval/reconnect.py). For a cell of THIS notebook whose
 * output area runs no request of this page, the cell is attached to the kernel's request:
 * a stand-in for the request's future hands the output area every iopub message of that
 * request (and the updates of its displays), the panel is shown again as its widget view
 * (the widget manager restores the live models from the kernel), so its buttons decide
 * the waiting cell, and the panel's final static form and the run's result follow in the
 * cell as they would have in the page that sent it. A kernel without skill_magics, or a
 * server without its extension, answers nothing and nothing changes.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import type { CodeCell } from '@jupyterlab/cells';
import { URLExt } from '@jupyterlab/coreutils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage, ServerConnection } from '@jupyterlab/services';

const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
const RECHECK_MS = 3000; // while the kernel is busy: a request sent before may ask later
const ENDED = ['dead', 'restarting', 'autorestarting'];

/** Where a waiting question is shown (the side panel state's `cell`). */
export interface ICellPlace {
  cell_id: string;
  request: string;
  display_id: string;
  model_id: string;
  execution_count: number | null;
}

interface IWaiting {
  id: string;
  summary: string;
  cell?: ICellPlace | null;
}

/**
 * A stand-in for the future of an execute_request another page sent: the output area
 * takes it as its own (`outputArea.future`), and it hands over the iopub messages of that
 * request and the updates of the displays it made, until the request ends.
 */
class AttachedRequest {
  onIOPub: (msg: KernelMessage.IIOPubMessage) => void | PromiseLike<void> = () => undefined;
  onReply: (msg: any) => void | PromiseLike<void> = () => undefined;
  onStdin: (msg: any) => void | PromiseLike<void> = () => undefined;
  readonly done: Promise<any>;
  readonly msg: any;
  private finish: (value: any) => void = () => undefined;
  private disposed = false;
  ended = false;
  private readonly displays = new Set<string>();

  constructor(
    private readonly kernel: Kernel.IKernelConnection,
    readonly place: ICellPlace
  ) {
    this.done = new Promise(resolve => (this.finish = resolve));
    this.msg = { header: { msg_id: place.request, msg_type: 'execute_request' } };
    this.displays.add(place.display_id);
    kernel.iopubMessage.connect(this.route, this);
    kernel.statusChanged.connect(this.onStatus, this);
    kernel.disposed.connect(this.dispose, this);
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  registerMessageHook(): void {
    // no timing is recorded for a request this page did not send
  }
  removeMessageHook(): void {
    // see registerMessageHook
  }
  sendInputReply(): void {
    // an input box is answered in the page that sent the request
  }

  dispose(): void {
    if (this.disposed) {
      return;
    }
    this.disposed = true;
    this.kernel.iopubMessage.disconnect(this.route, this);
    this.kernel.statusChanged.disconnect(this.onStatus, this);
    this.kernel.disposed.disconnect(this.dispose, this);
    this.finish(undefined);
  }

  /** The panel's output as the cell displayed it (its display id, its widget view). */
  showPanel(summary: string): void {
    const content = {
      data: {
        [WIDGET_MIME]: { model_id: this.place.model_id, version_major: 2, version_minor: 0 },
        'text/plain': summary
      },
      metadata: {},
      transient: { display_id: this.place.display_id }
    };
    void this.onIOPub({
      header: { msg_id: `skill-magics-${this.place.display_id}`, msg_type: 'display_data' },
      parent_header: this.msg.header,
      metadata: {},
      content,
      channel: 'iopub'
    } as any);
  }

  private route(_kernel: Kernel.IKernelConnection, msg: KernelMessage.IIOPubMessage): void {
    if (this.disposed) {
      return;
    }
    const type = msg.header.msg_type;
    const content = msg.content as any;
    const display = content?.transient?.display_id;
    if ((msg.parent_header as any)?.msg_id === this.place.request) {
      if (type === 'status' && content.execution_state === 'idle') {
        this.ended = true; // the request ended (not the kernel)
        this.dispose();
        return;
      }
      if (type === 'display_data' && typeof display === 'string') {
        this.displays.add(display);
      }
      void this.onIOPub(msg);
    } else if (type === 'update_display_data' && this.displays.has(display)) {
      void this.onIOPub(msg); // e.g. the panel once decided: its static form
    }
  }

  private onStatus(_kernel: Kernel.IKernelConnection, status: Kernel.Status): void {
    if (ENDED.includes(status)) {
      this.dispose();
    }
  }
}

/** The kernel's waiting questions (null: no skill_magics there, or no server part). */
async function waitingOf(
  settings: ServerConnection.ISettings,
  kernelId: string
): Promise<IWaiting[] | null> {
  const url = URLExt.join(settings.baseUrl, 'skill-magics/kernels', kernelId, 'state');
  try {
    const response = await ServerConnection.makeRequest(url, {}, settings);
    if (!response.ok) {
      return null;
    }
    const state = await response.json();
    return Array.isArray(state?.waiting) ? state.waiting : null;
  } catch {
    return null;
  }
}

/**
 * Attach the cell that shows `question` (a cell of THIS notebook) to its request, unless
 * this page runs a request in that cell itself (it already shows what that request shows).
 */
export function attach(
  panel: NotebookPanel,
  kernel: Kernel.IKernelConnection,
  question: IWaiting
): boolean {
  const place = question.cell;
  if (!place || !place.cell_id || !place.request || !place.model_id || !place.display_id) {
    return false;
  }
  const cell = panel.content.widgets.find(c => c.model.id === place.cell_id);
  if (!cell || cell.model.type !== 'code' || cell.isDisposed) {
    return false;
  }
  const area = (cell as CodeCell).outputArea;
  const current = area.future as any;
  if (current && !current.isDisposed) {
    return false;
  }
  if ((panel.context.model as any).collaborative && shows(cell.model as any, place.model_id)) {
    return false; // shared outputs (real-time collaboration): the page that runs it fills them
  }
  const model = cell.model as any;
  const request = new AttachedRequest(kernel, place);
  area.future = request as any; // the stale outputs go, as when a cell starts
  // What the kernel sends for a cell it runs is trusted, as when this page runs it
  // (CodeCell.execute): else the widget view is not drawn, only the text beside it.
  cell.model.trusted = true;
  request.showPanel(question.summary);
  if ('executionState' in model) {
    model.executionState = 'running';
  }
  void request.done.then(() => {
    if (cell.isDisposed || area.future !== (request as any)) {
      return;
    }
    if ('executionState' in model) {
      model.executionState = 'idle';
    }
    if (request.ended && typeof place.execution_count === 'number') {
      model.executionCount = place.execution_count;
    }
  });
  return true;
}

/** Whether a cell's outputs hold the widget view of `modelId`. */
function shows(model: any, modelId: string): boolean {
  const outputs = model?.outputs;
  for (let i = 0; i < (outputs?.length ?? 0); i++) {
    const view = outputs.get(i)?.data?.[WIDGET_MIME] as any;
    if (view?.model_id === modelId) {
      return true;
    }
  }
  return false;
}

/** Look for questions to show in `panel`'s cells whenever its kernel (re)connects. */
function follow(panel: NotebookPanel, settings: ServerConnection.ISettings): void {
  const context = panel.sessionContext;
  let checking = false;
  let again = false; // asked to look while looking (e.g. the kernel changed meanwhile)
  const check = async (): Promise<void> => {
    if (checking) {
      again = true;
      return;
    }
    checking = true;
    try {
      for (;;) {
        again = false;
        const kernel = context.session?.kernel;
        if (!kernel || panel.isDisposed) {
          return;
        }
        const waiting = await waitingOf(settings, kernel.id);
        if (kernel === context.session?.kernel) {
          for (const question of waiting ?? []) {
            attach(panel, kernel, question);
          }
        }
        if (again) {
          continue;
        }
        if (waiting === null || kernel.status !== 'busy') {
          return; // nothing sent before runs any more: nothing more can ask
        }
        await new Promise(resolve => setTimeout(resolve, RECHECK_MS));
      }
    } finally {
      checking = false;
    }
  };
  context.connectionStatusChanged.connect((_context, status) => {
    if (status === 'connected') {
      void check();
    }
  });
  context.kernelChanged.connect(() => void check());
  void context.ready.then(check);
}

export const reattach: JupyterFrontEndPlugin<void> = {
  id: 'skill-magics-labextension:reattach',
  description: 'Shows an approval that waits in a cell again after the page was reloaded',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    const settings = ServerConnection.makeSettings();
    tracker.forEach(panel => follow(panel, settings));
    tracker.widgetAdded.connect((_tracker, panel) => follow(panel, settings));
  }
};
