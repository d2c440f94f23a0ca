// Rank each query as the search page would (Sphinx 7.4's searchtools.js),
// and return the first five results of each as "docname#anchor", in the
// order the page lists them.
(queries) => {
  const out = {};
  for (const q of queries) {
    const [query, terms, excluded, highlighted, objects] = Search._parseQuery(q);
    const results = Search._performSearch(query, terms, excluded,
                                          highlighted, objects);
    // The page shows them from the end of the list (results.pop()).
    out[q] = results.slice(-5).reverse().map(r => r[0] + r[2]);
  }
  return out;
}
