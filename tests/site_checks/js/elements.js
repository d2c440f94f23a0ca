// Each element of the body as [tag, {attribute: value}, children or its
// text], the ids of Font Awesome's icon titles made alike (its script
// draws random ones); read by test_site.py's icon test.
() => {
  const tree = e => [e.tagName.toLowerCase(),
    Object.fromEntries([...e.attributes].map(a => [a.name,
      a.value.replace(/svg-inline--fa-title-[\w-]+/, "ID")])),
    e.children.length ? [...e.children].map(tree) : e.textContent];
  return [...document.body.children].map(tree);
}
