// Helpers (CommonJS).
module.exports = { count: (xs) => xs.length };
