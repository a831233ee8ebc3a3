// Reconnect timing, shared with the browser page.
(function () {
  const MIN_RECONNECT_MS = 500;
  function nextDelay(n) { return Math.min(MIN_RECONNECT_MS * 2 ** n, 30000); }
  if (typeof module !== 'undefined' && module.exports) {
    module.exports = { nextDelay };
  }
})();
