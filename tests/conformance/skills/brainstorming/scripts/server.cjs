// The companion server (prints its address and exits with --once).
const path = require('path');
const info = { url: 'http://127.0.0.1:0', helper: path.basename(__filename) };
if (process.argv.includes('--once')) {
  console.log(JSON.stringify(info));
}
