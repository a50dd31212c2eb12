// Fill every ring to the top (setAll is in lib/rings.js).
function fill() {
    setAll(10);
}
