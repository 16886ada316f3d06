// The course site's search scorer (docs/conf.py: html_search_scorer). Sphinx scores a page by where a word
// occurs (its title, its text), not by how much the page is about it, and breaks ties by title, so an error page
// that names a term once ranked above the lesson teaching it. Here lessons, guides and the API rank first for
// the words they share with the error pages: an error page's score (and the catalogue's) drops by a title match's
// worth, unless the query is its id (an index entry of that page: 100 points, untouched); a lesson gains a little,
// so among pages that only mention a word the lessons come first.
var Scorer = {
  score: (result) => {
    const [docname, _title, _anchor, _descr, score, _filename, kind] = result;
    if (docname.startsWith("errors/") && kind !== "index") return score - Scorer.title;
    if (docname.startsWith("lessons/")) return score + Scorer.partialTerm;
    return score;
  },
  // Sphinx's own weights, unchanged
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: {0: 15, 1: 5, 2: -5},
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};
