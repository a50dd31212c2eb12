// Counts its calls in its store, by label: the counts survive saves of this file, reloads and
// restarts of macrod, and a call that throws changes none of them.
//   macro run tally            → 1, 2, 3, ...
//   macro run tally deploys    → a count of its own
//   macro store tally          → every count
function tally(label) {
  const key = typeof label === "string" && label !== "" ? label : "calls";
  const count = (store.get(key) ?? 0) + 1;
  store.set(key, count);
  return count;
}
