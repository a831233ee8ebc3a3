/**
 * The Skills side panel of skill_magics (JupyterLab 4, Notebook 7).
 *
 * A left-sidebar tab for the current notebook's kernel: its skills, the approval questions
 * waiting for an answer (Yes once / Yes in session / No), the "Yes in session" grants in
 * force (Revoke), recent runs (a click shows a run's result tabs), and an install field.
 * Everything comes from the server extension (skill_magics.server:
 * /skill-magics/kernels/<id>/<op>), which forwards to the kernel's own channel; the panel
 * decides nothing itself. Every text is set with textContent (never as HTML), and every
 * control has an accessible name.
 */
import {
  ILabShell,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { MainAreaWidget } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ServerConnection } from '@jupyterlab/services';
import { URLExt } from '@jupyterlab/coreutils';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';
import { reattach } from './reattach';

const POLL_MS = 1500;
const SKILLS_EVERY = 20; // polls between two reloads of the skills list (30 s; Refresh: now)

const ICON = new LabIcon({
  name: 'skill-magics:skills',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16"><path ' +
    'class="jp-icon3" fill="#616161" d="M12 2 3 7v10l9 5 9-5V7l-9-5zm0 2.3 6.7 3.7L12 ' +
    '11.7 5.3 8 12 4.3zM5 9.7l6 3.3v6.6l-6-3.3V9.7zm8 9.9V13l6-3.3v6.6l-6 3.3z"/></svg>'
});

interface IQuestion {
  id: string;
  skills: string[];
  summary: string;
  install: boolean;
}
interface IRun {
  time: string;
  skill: string;
  script: string;
  outcome: string;
  exit_code: number | null;
  duration_ms: number | null;
  reason: string;
  arguments: string;
  start: string;
  sandbox: string;
  result: string; // the id of its kept result ("" when none: not a run, or too old)
}
interface IState {
  waiting: IQuestion[];
  grants: { skill: string; fingerprint: string }[];
  preapprovals: { key: string; what: string }[];
  runs: IRun[];
  installs: { source: string; messages: string[]; done: boolean; error: string }[];
}
interface ISkill {
  name: string;
  description: string;
  path: string;
  scripts: string[];
  origin: string;
  signer: string;
  environment: string;
  problem?: string;
}

// A run's result as the cell shows it (notebook/sidepanel.py result_view): header and tabs.
interface IResultTab {
  title: string;
  text: string;
  notes: string[];
  placeholder: string;
}
interface IRunResult {
  id: string;
  time: string;
  name: string;
  script: string;
  status: string;
  label: string;
  exit_code: string;
  took: string;
  start: string;
  sandbox: string;
  arguments: string;
  message: string;
  sections: IResultTab[];
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  text = ''
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    node.setAttribute(name, value);
  }
  if (text) {
    node.textContent = text;
  }
  return node;
}

function button(label: string, aria: string, onClick: () => void): HTMLButtonElement {
  const b = el('button', { type: 'button', 'aria-label': aria, class: 'skm-button' }, label);
  b.addEventListener('click', onClick);
  return b;
}

class SkillsPanel extends Widget {
  private readonly settings = ServerConnection.makeSettings();
  private kernelId = '';
  private timer = 0;
  private busy = false;
  private skills: ISkill[] = [];
  private skillsLoaded = false;
  private polls = 0;
  private lastState = '';
  private readonly status: HTMLElement;
  private readonly kernelLine: HTMLElement;
  private readonly skillsList: HTMLElement;
  private readonly search: HTMLInputElement;
  private readonly waitingList: HTMLElement;
  private readonly grantsList: HTMLElement;
  private readonly runsList: HTMLElement;
  private readonly resultView: HTMLElement;
  private resultId = ''; // the run whose result is shown ('' none)
  private readonly installLog: HTMLElement;

  constructor(
    private readonly app: JupyterFrontEnd,
    private readonly tracker: INotebookTracker
  ) {
    super();
    this.id = 'skill-magics-sidepanel';
    this.title.icon = ICON;
    this.title.caption = 'Skills';
    this.addClass('skm-SidePanel');
    this.node.setAttribute('role', 'complementary');
    this.node.setAttribute('aria-label', 'Skills side panel');

    const node = this.node;
    node.appendChild(el('h2', { class: 'skm-title' }, 'Skills'));
    this.kernelLine = node.appendChild(el('div', { class: 'skm-kernel' }));
    this.status = node.appendChild(
      el('div', { role: 'status', 'aria-live': 'polite', class: 'skm-status' })
    );

    // Waiting for you
    const waiting = this.section('Waiting for you');
    this.waitingList = waiting.appendChild(
      el('ul', { role: 'list', 'aria-label': 'Requests waiting for you' })
    );

    // Allowed this session
    const grants = this.section('Allowed this session');
    this.grantsList = grants.appendChild(
      el('ul', { role: 'list', 'aria-label': 'Allowed this session' })
    );

    // Skills
    const skills = this.section('Skills');
    const tools = skills.appendChild(el('div', { class: 'skm-row' }));
    this.search = tools.appendChild(
      el('input', { type: 'search', 'aria-label': 'Search skills', placeholder: 'Search' })
    );
    this.search.addEventListener('input', () => this.renderSkills());
    tools.appendChild(button('Refresh', 'Refresh the skills', () => void this.loadSkills()));
    this.skillsList = skills.appendChild(el('ul', { role: 'list', 'aria-label': 'Skills' }));
    const add = skills.appendChild(el('div', { class: 'skm-row' }));
    const folder = add.appendChild(
      el('input', { type: 'text', 'aria-label': 'Folder to add', placeholder: 'Folder of skills' })
    );
    add.appendChild(
      button('Add folder', 'Add folder', () => {
        void this.act('add_dir', { path: folder.value }).then(ok => {
          if (ok) {
            folder.value = '';
            void this.loadSkills();
          }
        });
      })
    );

    // Recent runs
    const runs = this.section('Recent runs');
    this.runsList = runs.appendChild(el('ul', { role: 'list', 'aria-label': 'Recent runs' }));
    this.resultView = runs.appendChild(el('div', { class: 'skm-result', hidden: '' }));

    // Install
    const install = this.section('Install');
    const row = install.appendChild(el('div', { class: 'skm-row' }));
    const source = row.appendChild(
      el('input', {
        type: 'text',
        'aria-label': 'Install source',
        placeholder: 'git URL, path, .skill file or https://HOST'
      })
    );
    row.appendChild(
      button('Install', 'Install', () => {
        void this.act('install', { source: source.value }).then(ok => {
          if (ok) {
            source.value = '';
          }
        });
      })
    );
    this.installLog = install.appendChild(
      el('ul', { role: 'list', 'aria-label': 'Installs asked here' })
    );

    tracker.currentChanged.connect(() => this.onKernelMaybeChanged());
    this.onKernelMaybeChanged();
  }

  private section(name: string): HTMLElement {
    const id = 'skm-' + name.toLowerCase().replace(/\W+/g, '-');
    const region = this.node.appendChild(
      el('section', { role: 'region', 'aria-labelledby': id, class: 'skm-section' })
    );
    region.appendChild(el('h3', { id }, name));
    return region;
  }

  private currentKernelId(): string {
    const panel = this.tracker.currentWidget;
    return panel?.sessionContext.session?.kernel?.id ?? '';
  }

  // One function object, so connecting it again to the same notebook adds nothing.
  private readonly followKernel = (): void => this.onKernelMaybeChanged();

  private onKernelMaybeChanged(): void {
    const panel = this.tracker.currentWidget;
    if (panel) {
      // A kernel started or restarted later (or changed) must be followed too.
      panel.sessionContext.kernelChanged.connect(this.followKernel, this); // once per panel
    }
    const id = this.currentKernelId();
    if (id === this.kernelId) {
      return;
    }
    this.kernelId = id;
    this.closeResult(false); // another kernel's runs
    this.lastState = '';
    this.skills = [];
    this.skillsLoaded = false;
    const name = panel ? panel.context.path : '';
    this.kernelLine.textContent = id
      ? `Kernel of ${name}`
      : 'Open a notebook with a running kernel to see its skills.';
    this.renderSkills();
    void this.refresh();
    void this.loadSkills();
  }

  protected onAfterShow(): void {
    this.start();
  }
  protected onAfterAttach(): void {
    this.start();
  }
  protected onBeforeHide(): void {
    this.stop();
  }
  protected onBeforeDetach(): void {
    this.stop();
  }

  private start(): void {
    if (!this.timer) {
      this.timer = window.setInterval(() => void this.refresh(), POLL_MS);
    }
    this.onKernelMaybeChanged();
    void this.refresh();
  }

  private stop(): void {
    if (this.timer) {
      window.clearInterval(this.timer);
      this.timer = 0;
    }
  }

  private async call(op: string, body?: Record<string, string>): Promise<any> {
    const kernel = this.kernelId;
    if (!kernel) {
      return null;
    }
    let url = URLExt.join(this.settings.baseUrl, 'skill-magics/kernels', kernel, op);
    const init: RequestInit = {};
    if (body !== undefined && op !== 'skill_md' && op !== 'result') {
      init.method = 'POST';
      init.body = JSON.stringify(body);
    } else if (body !== undefined) {
      url += URLExt.objectToQueryString(body);
    }
    const response = await ServerConnection.makeRequest(url, init, this.settings);
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      throw new Error(data.error || data.message || response.statusText);
    }
    return data;
  }

  private say(text: string): void {
    this.status.textContent = text;
  }

  private async act(op: string, body: Record<string, string>): Promise<boolean> {
    try {
      await this.call(op, body);
      this.say('');
      await this.refresh();
      return true;
    } catch (error) {
      this.say(String((error as Error).message ?? error));
      return false;
    }
  }

  async refresh(): Promise<void> {
    if (this.busy || !this.kernelId || !this.isVisible) {
      return;
    }
    this.busy = true;
    try {
      const state: IState | null = await this.call('state');
      if (state) {
        const text = JSON.stringify(state);
        if (text !== this.lastState) {
          this.lastState = text;
          this.render(state);
        }
        if (this.status.dataset.kind === 'channel') {
          this.say('');
          delete this.status.dataset.kind;
        }
        this.polls += 1;
        if (!this.skillsLoaded || this.polls % SKILLS_EVERY === 0) {
          void this.loadSkills(); // the kernel serves now (%load_ext just ran), or a while passed
        }
      }
    } catch (error) {
      this.status.dataset.kind = 'channel';
      this.skillsLoaded = false; // e.g. a restarted kernel: reload the list once it serves
      this.say(String((error as Error).message ?? error));
    } finally {
      this.busy = false;
    }
  }

  async loadSkills(): Promise<void> {
    if (!this.kernelId) {
      return;
    }
    try {
      const data = await this.call('skills');
      this.skills = data?.skills ?? [];
      this.skillsLoaded = data !== null;
      this.renderSkills();
    } catch (error) {
      this.status.dataset.kind = 'channel';
      this.say(String((error as Error).message ?? error));
    }
  }

  private render(state: IState): void {
    this.waitingList.replaceChildren();
    if (!state.waiting.length) {
      this.waitingList.appendChild(el('li', { class: 'skm-empty' }, 'Nothing waits.'));
    }
    for (const q of state.waiting) {
      const who = q.skills.join(', ');
      const item = this.waitingList.appendChild(
        el('li', { role: 'group', 'aria-label': `Request for ${who}`, class: 'skm-question' })
      );
      item.appendChild(el('pre', { class: 'skm-summary' }, q.summary));
      const row = item.appendChild(el('div', { class: 'skm-row' }));
      for (const [label, choice] of [
        ['Yes once', 'yes_once'],
        ['Yes in session', 'yes_in_session'],
        ['No', 'no']
      ]) {
        row.appendChild(
          button(label, `${label} for ${who}`, () => void this.act('decide', { id: q.id, choice }))
        );
      }
    }

    this.grantsList.replaceChildren();
    if (!state.grants.length && !state.preapprovals.length) {
      this.grantsList.appendChild(el('li', { class: 'skm-empty' }, 'Nothing is allowed.'));
    }
    for (const g of state.grants) {
      const item = this.grantsList.appendChild(el('li', { class: 'skm-grant' }));
      item.appendChild(el('span', {}, `${g.skill} (files ${g.fingerprint})`));
      item.appendChild(
        button('Revoke', `Revoke ${g.skill}`, () => void this.act('revoke', { skill: g.skill }))
      );
    }
    for (const p of state.preapprovals) {
      const item = this.grantsList.appendChild(el('li', { class: 'skm-preapproval' }));
      item.appendChild(el('span', {}, `Pre-approved by ${p.what}`));
      item.appendChild(
        button(
          'Revoke',
          `Revoke pre-approval ${p.what}`,
          () => void this.act('revoke', { preapproval: p.key })
        )
      );
    }

    this.runsList.replaceChildren();
    if (!state.runs.length) {
      this.runsList.appendChild(el('li', { class: 'skm-empty' }, 'No runs yet.'));
    }
    for (const r of state.runs) {
      const exit = r.exit_code === null ? '' : ` exit ${r.exit_code}`;
      const took = r.duration_ms === null ? '' : ` ${Math.round(r.duration_ms)} ms`;
      const when = r.time.replace('T', ' ').slice(0, 19);
      // A click opens the run's record: why, with which arguments, how it started.
      const item = this.runsList.appendChild(el('li', { class: 'skm-run' }));
      const details = item.appendChild(el('details'));
      details.appendChild(
        el('summary', {}, `${when} ${r.skill} ${r.script}: ${r.outcome}${exit}${took}`)
      );
      const facts = [
        r.reason && `reason: ${r.reason}`,
        r.arguments && `arguments: ${r.arguments}`,
        r.start && `start: ${r.start}`,
        r.sandbox && `sandbox: ${r.sandbox}`
      ].filter(Boolean);
      details.appendChild(el('pre', { class: 'skm-summary' }, facts.join('\n') || 'no details'));
      this.addResultButton(item, r, when);
    }
    this.forgetGoneResult(state.runs);

    this.installLog.replaceChildren();
    for (const job of state.installs) {
      const end = job.error ? ` failed: ${job.error}` : job.done ? ' done' : ' running';
      const item = this.installLog.appendChild(el('li', {}, `${job.source}:${end}`));
      if (job.messages.length) {
        item.appendChild(el('pre', { class: 'skm-summary' }, job.messages.join('\n')));
      }
    }
  }

  // -- Recent runs: a run's result tabs (stdout, stderr, exit code, signal, timing) ----------

  private addResultButton(item: HTMLElement, r: IRun, when: string): void {
    if (!r.result) {
      return; // nothing kept: a decision, a refusal, or a run older than the kernel keeps
    }
    const label = `Show result of ${r.skill} ${r.script} at ${when}`;
    const b = button('Result', label, () => void this.showResult(r.result, b));
    b.dataset.run = r.result;
    b.setAttribute('aria-expanded', String(this.resultId === r.result));
    b.setAttribute('aria-controls', 'skm-result-view');
    item.appendChild(b);
  }

  private forgetGoneResult(runs: IRun[]): void {
    // A restarted kernel (or one past its bound) no longer has the run shown: close it.
    if (this.resultId && !runs.some(r => r.result === this.resultId)) {
      this.closeResult(false);
    }
  }

  private async showResult(id: string, opener: HTMLElement): Promise<void> {
    try {
      const data: IRunResult | null = await this.call('result', { id });
      if (data) {
        this.renderResult(data);
        opener.setAttribute('aria-expanded', 'true');
      }
    } catch (error) {
      this.say(String((error as Error).message ?? error));
    }
  }

  private renderResult(data: IRunResult): void {
    const view = this.resultView;
    this.resultId = data.id;
    view.replaceChildren();
    view.id = 'skm-result-view';
    view.hidden = false;
    view.setAttribute('role', 'region');
    view.setAttribute('aria-label', `Result of ${data.name}`);
    const head = view.appendChild(el('div', { class: 'skm-row skm-result-head' }));
    const title = head.appendChild(
      el('h4', { tabindex: '-1' }, `${data.name} (${data.time.replace('T', ' ').slice(0, 19)})`)
    );
    head.appendChild(button('Close', 'Close the result', () => this.closeResult(true)));
    const facts = [data.label, data.exit_code, data.took, data.start, data.script];
    view.appendChild(el('div', { class: 'skm-facts' }, facts.filter(Boolean).join(' · ')));
    for (const line of [data.arguments && `arguments: ${data.arguments}`, data.sandbox]) {
      if (line) {
        view.appendChild(el('div', { class: 'skm-facts' }, line));
      }
    }
    if (data.message) {
      view.appendChild(el('div', { class: 'skm-result-message' }, data.message));
    }
    if (data.sections.length) {
      this.renderTabs(view, data.sections);
    }
    view.addEventListener('keydown', this.closeOnEscape);
    title.focus();
  }

  // One function object: added again on each render, it is still one listener.
  private readonly closeOnEscape = (event: KeyboardEvent): void => {
    if (event.key === 'Escape') {
      event.preventDefault();
      this.closeResult(true);
    }
  };

  /** The tabs, as WAI-ARIA tabs: arrows, Home and End move between them. */
  private renderTabs(view: HTMLElement, sections: IResultTab[]): void {
    const list = view.appendChild(
      el('div', { role: 'tablist', 'aria-label': 'Result tabs', class: 'skm-tabs' })
    );
    const panel = view.appendChild(el('div', { role: 'tabpanel', class: 'skm-tabpanel' }));
    panel.id = 'skm-result-panel';
    const tabs: HTMLButtonElement[] = [];
    const select = (index: number, focus: boolean): void => {
      tabs.forEach((tab, i) => {
        tab.setAttribute('aria-selected', String(i === index));
        tab.tabIndex = i === index ? 0 : -1;
      });
      const section = sections[index];
      panel.setAttribute('aria-labelledby', tabs[index].id);
      panel.replaceChildren(
        el('pre', { class: 'skm-summary skm-output' }, section.text || section.placeholder)
      );
      for (const note of section.notes) {
        panel.appendChild(el('div', { class: 'skm-note' }, note));
      }
      if (focus) {
        tabs[index].focus();
      }
    };
    sections.forEach((section, i) => {
      const tab = list.appendChild(
        el(
          'button',
          {
            type: 'button',
            role: 'tab',
            id: `skm-result-tab-${i}`,
            'aria-controls': panel.id,
            class: 'skm-tab'
          },
          section.title
        )
      );
      tab.addEventListener('click', () => select(i, false));
      tabs.push(tab);
    });
    list.addEventListener('keydown', (event: KeyboardEvent) => {
      const at = tabs.indexOf(document.activeElement as HTMLButtonElement);
      const last = tabs.length - 1;
      const to =
        event.key === 'ArrowRight'
          ? (at + 1) % tabs.length
          : event.key === 'ArrowLeft'
            ? (at + last) % tabs.length
            : event.key === 'Home'
              ? 0
              : event.key === 'End'
                ? last
                : -1;
      if (to >= 0 && at >= 0) {
        event.preventDefault();
        select(to, true);
      }
    });
    select(0, false);
  }

  private closeResult(refocus: boolean): void {
    const id = this.resultId;
    this.resultId = '';
    this.resultView.hidden = true;
    this.resultView.replaceChildren();
    const opener = id
      ? this.runsList.querySelector<HTMLElement>(`button[data-run="${CSS.escape(id)}"]`)
      : null;
    opener?.setAttribute('aria-expanded', 'false');
    if (refocus) {
      opener?.focus();
    }
  }

  private renderSkills(): void {
    const needle = this.search.value.trim().toLowerCase();
    this.skillsList.replaceChildren();
    const shown = this.skills.filter(
      s => !needle || `${s.name} ${s.description}`.toLowerCase().includes(needle)
    );
    if (!shown.length) {
      this.skillsList.appendChild(
        el('li', { class: 'skm-empty' }, this.kernelId ? 'No skills.' : '')
      );
    }
    for (const s of shown) {
      const item = this.skillsList.appendChild(
        el('li', { class: 'skm-skill', 'aria-label': `Skill ${s.name}` })
      );
      item.appendChild(el('div', { class: 'skm-name' }, s.name));
      item.appendChild(el('div', { class: 'skm-description' }, s.description));
      const facts = [
        `origin: ${s.origin}`,
        `signer: ${s.signer || 'unknown'}`,
        `environment: ${s.environment || 'unknown'}`,
        `scripts: ${s.scripts.join(', ') || 'none'}`
      ];
      if (s.problem) {
        facts.push(`problem: ${s.problem}`);
      }
      item.appendChild(el('div', { class: 'skm-facts' }, facts.join('\n')));
      item.appendChild(
        button('Open SKILL.md', `Open SKILL.md of ${s.name}`, () => void this.openSkillMd(s.name))
      );
    }
  }

  private async openSkillMd(name: string): Promise<void> {
    try {
      const data = await this.call('skill_md', { name });
      const content = new Widget();
      content.addClass('skm-SkillMd');
      content.node.appendChild(el('pre', { 'aria-label': `SKILL.md of ${name}` }, data.text));
      const main = new MainAreaWidget({ content });
      main.title.label = `${name}: SKILL.md`;
      main.title.caption = data.path;
      this.app.shell.add(main, 'main');
    } catch (error) {
      this.say(String((error as Error).message ?? error));
    }
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'skill-magics-labextension:sidepanel',
  description: 'The Skills side panel of skill_magics',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ILabShell],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    const panel = new SkillsPanel(app, tracker);
    app.shell.add(panel, 'left', { rank: 600 });
  }
};

export default [plugin, reattach];
