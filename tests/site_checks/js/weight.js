// Bytes of the page and of every file it loaded, as served (uncompressed:
// the test server does not gzip), whether or not they came from the cache.
() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const files = performance.getEntriesByType("resource").map(r => ({
    url: r.name, bytes: r.decodedBodySize}));
  return {page: nav ? nav.decodedBodySize : 0, files};
}
