// Title-case the arguments.
import { titleCase } from './lib/text.mjs';
console.log(titleCase(process.argv.slice(2).join(' ')));
