// Tap a sidebar button ("primary": the chapters, "secondary": the
// Contents) and report what the dialog it opens shows; then close it.
async (which) => {
  const button = [...document.querySelectorAll(`button.${which}-toggle`)]
    .find(b => b.checkVisibility());
  if (!button) return null;
  button.click();
  const dialog = document.getElementById(`pst-${which}-sidebar-modal`);
  for (let i = 0; i < 50 && !(dialog && dialog.open); i++) {
    await new Promise(r => setTimeout(r, 20));
  }
  const shown = dialog && dialog.open ? [...dialog.querySelectorAll("a")]
    .filter(a => a.checkVisibility() && a.getBoundingClientRect().width > 0)
    .map(a => a.getAttribute("href")) : [];
  // how many of its links read as the site's title (the logo's text)
  const title = (document.querySelector(".logo__title") || {}).textContent;
  const titles = dialog && dialog.open ? [...dialog.querySelectorAll("a")]
    .filter(a => a.checkVisibility() && title
            && a.textContent.trim() === title.trim()).length : 0;
  const open = !!(dialog && dialog.open);
  if (open) dialog.close();
  return {open, shown, titles};
}
