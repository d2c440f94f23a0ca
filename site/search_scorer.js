// The search page's own rules on top of Sphinx 7.4's searchtools.js
// (html_search_scorer: Sphinx puts this file into language_data.js, which
// every page loads after searchtools.js). Three of them:

// 1. Sphinx's default scores, and two rules added. A result that is the
// cell defining a name (an index entry made by book_search.py; its anchor
// starts "#mininn-") comes before every other result, in its own order.
// (A secondary entry, another class's method of a name Module defines,
// such as ParameterList's __call__, is listed after all of them by Sphinx.)
// And a page found by a query of several Chinese words gains a point for
// each word its headings hold: Sphinx scores a page by its best word
// alone, so for 注册缓冲区 every page with 缓冲区 in a heading tied with
// chapter 1, whose headings hold both words.
var Scorer = {
  score: (result) => {
    const [docname, title, anchor, descr, score, filename] = result;
    if (anchor.startsWith("#mininn-")) return score + 1000;
    const words = Scorer.chineseWords;
    if (anchor !== "" || descr !== null || words.length < 2) return score;
    const page = Search._index.docnames.indexOf(docname);
    const inHeadings = words.filter((word) =>
      [].concat(Search._index.titleterms[word] ?? []).includes(page));
    return score + inHeadings.length;
  },
  chineseWords: [],  // the query's, set by splitQuery
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: {0: 15, 1: 5, 2: -5},
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};

// 2. A Chinese query is split into the words the index holds. Chinese is
// typed without spaces (注册缓冲区), and the index holds the words jieba
// cut the text into when the site was built (注册, 缓冲区; the book's terms
// whole, from TERMS.md: site/languages.py). So each run of Chinese is cut
// at the longest index word that starts it, again and again (forward
// maximum matching); a character that starts no word of two or more (的,
// 在) is dropped, as the index dropped it, unless it is part of a longer
// unknown stretch, which stays one word (and finds nothing, as it should).
// Everything else is split as Sphinx splits it. This is Sphinx's own hook
// for a language's query splitter (searchtools.js's `splitQuery`).
var splitQuery = (query) => {
  const index = typeof Search !== "undefined" && Search._index;
  const known = (word) => !!index && (index.terms.hasOwnProperty(word)
                                      || index.titleterms.hasOwnProperty(word));
  const words = [];
  for (const part of query.split(/[^\p{Letter}\p{Number}_]+/u)) {
    for (const run of part.match(/\p{Script=Han}+|[^\p{Script=Han}]+/gu)
                      || []) {
      if (!/\p{Script=Han}/u.test(run)) {
        words.push(run);
        continue;
      }
      let unknown = "";
      for (let at = 0; at < run.length;) {
        let end = Math.min(run.length, at + 12);
        while (end > at + 1 && !known(run.slice(at, end))) end--;
        if (end > at + 1) {
          if (unknown.length > 1) words.push(unknown);
          unknown = "";
          words.push(run.slice(at, end));
          at = end;
        } else {
          unknown += run[at++];
        }
      }
      if (unknown.length > 1) words.push(unknown);
    }
  }
  Scorer.chineseWords = words.filter((word) => /\p{Script=Han}/u.test(word));
  return words;
};

// 3. The text under a result is the page's prose, not its chrome: the
// header's buttons, the note under the title, the print-only contents,
// the page's contents list and the previous/next links are left out.
// (searchtools.js, loaded before this file, defined Search.)
if (typeof Search !== "undefined") {
  const chrome = [".bd-header-article", ".onlyprint", "p.book-downloads",
                  ".bd-sidebar-secondary", ".prev-next-footer",
                  ".bd-footer-content"].join(", ");
  const htmlToText = Search.htmlToText;
  Search.htmlToText = (htmlString, anchor) => {
    const page = new DOMParser().parseFromString(htmlString, "text/html");
    page.querySelectorAll(chrome).forEach((element) => element.remove());
    return htmlToText(page.documentElement.outerHTML, anchor);
  };
}
