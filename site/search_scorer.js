// The search page's own rules on top of Sphinx 7.4's searchtools.js
// (html_search_scorer: Sphinx puts this file into language_data.js, which
// every page loads after searchtools.js).

// 1. A result that is the cell defining a name (an index entry of
// book_search.py, anchor "#mininn-...") comes before all others, in its own
// order. A page found by a query of several Chinese words gains a point for
// each word its headings hold: Sphinx scores a page by its best word alone,
// so for 注册缓冲区 every page with 缓冲区 in a heading tied with chapter 1.
Scorer.score = (result) => {  // Sphinx's Scorer: searchtools.js made it
  const [docname, title, anchor, descr, score, filename] = result;
  if (anchor.startsWith("#mininn-")) return score + 1000;
  const words = Scorer.chineseWords;
  if (anchor !== "" || descr !== null || words.length < 2) return score;
  const page = Search._index.docnames.indexOf(docname);
  const inHeadings = words.filter((word) =>
    [].concat(Search._index.titleterms[word] ?? []).includes(page));
  return score + inHeadings.length;
};
Scorer.chineseWords = [];  // the query's, set by splitQuery

// 2. A Chinese query, typed without spaces (注册缓冲区), is cut into the
// words the index holds (jieba cut the text into 注册, 缓冲区 at build time;
// the book's terms whole, site/languages.py): each run of Chinese at the
// longest index word that starts it, again and again (forward maximum
// matching). A character that starts no word of two or more (的, 在) is
// dropped, as the index dropped it, unless part of a longer unknown stretch,
// which stays one word (and finds nothing). This is searchtools.js's hook for
// a language's splitter.
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

// 3. The text under a result is the page's prose, not its chrome (header
// buttons, the note under the title, print-only and page contents,
// previous/next links).
{
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
