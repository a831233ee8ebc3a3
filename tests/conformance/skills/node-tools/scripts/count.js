// Count the arguments.
const { count } = require('./lib/util');
console.log(JSON.stringify({ count: count(process.argv.slice(2)) }));
