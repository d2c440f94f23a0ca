// Where the open page stands: its hash, and the section it names (`id`):
// how far that section's top is below the window's top, the window's
// height, and the section's heading as the reader sees it.
(id) => {
  const section = document.getElementById(id);
  const heading = section && section.querySelector("h1, h2, h3, h4, h5, h6");
  return {
    hash: decodeURIComponent(location.hash.slice(1)),
    top: section && section.getBoundingClientRect().top,
    height: window.innerHeight,
    scrolled: window.scrollY,
    heading: heading && heading.textContent.replace(/#\s*$/, "").trim(),
  };
}
