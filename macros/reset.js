// Put every ring back to 0 (setAll is in lib/rings.js).
function reset() {
    setAll(0);
}
