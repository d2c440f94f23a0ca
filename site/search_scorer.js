// Sphinx's default scores (sphinx/themes/basic/static/searchtools.js,
// Sphinx 7.4), and one rule added: a result that is the cell defining a
// name (an index entry made by book_search.py; its anchor starts
// "#mininn-") comes before every other result, in its own order. (A
// secondary entry, another class's method of a name Module defines, such
// as ParameterList's __call__, is listed after all of them by Sphinx.)
var Scorer = {
  score: (result) => {
    const [docname, title, anchor, descr, score, filename] = result;
    return anchor.startsWith("#mininn-") ? score + 1000 : score;
  },
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: {0: 15, 1: 5, 2: -5},
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};
