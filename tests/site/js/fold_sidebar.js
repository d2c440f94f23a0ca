// On a wide screen the sidebar button folds the chapter list away:
// [shown before, shown after].
async () => {
  const sidebar = document.getElementById("pst-primary-sidebar");
  const shown = () => sidebar.checkVisibility({visibilityProperty: true});
  const before = shown();
  // The button a reader sees (a hidden copy may carry no handler).
  [...document.querySelectorAll("button.primary-toggle")]
    .find(b => b.checkVisibility()).click();
  for (let i = 0; i < 50 && shown(); i++) {
    await new Promise(r => setTimeout(r, 20));
  }
  return [before, shown()];
}
