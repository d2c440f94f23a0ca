// The figures the cells drew on this page (images under _images/): the
// pixels of the file, the CSS width it is shown at, the width its output
// asks for (IPython's "retina" PNGs ask for half their pixels: myst-nb
// writes it as style="width: ...px"), and the
// link that opens it alone.
() => [...document.querySelectorAll("article.bd-article img")]
  .filter(i => i.getAttribute("src").includes("_images/"))
  .map(i => {
    const link = i.closest("a");
    const box = i.getBoundingClientRect();
    return {
      src: i.getAttribute("src").split("/").pop(),
      naturalWidth: i.naturalWidth,
      shown: box.width,
      asked: i.style.width ? parseFloat(i.style.width)
        : i.getAttribute("width") ? parseFloat(i.getAttribute("width"))
        : i.naturalWidth,
      link: link ? link.href : null,
      svg: /\.svg$/i.test(i.getAttribute("src")),
    };
  })
