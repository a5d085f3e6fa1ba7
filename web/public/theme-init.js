// Runs before first paint: sets the `dark` class from the saved choice or the system setting.
(() => {
  let choice = 'system';
  try {
    choice = localStorage.getItem('bds-console-theme') || 'system';
  } catch {}
  const dark =
    choice === 'dark' || (choice !== 'light' && window.matchMedia('(prefers-color-scheme: dark)').matches);
  document.documentElement.classList.toggle('dark', dark);
})();
