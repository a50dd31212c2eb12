// Shared helpers for the demo macros. Files in macros/lib/ are plain scripts, evaluated before
// the macros in name order; their top-level functions are globals every macro can call.
// Use `function` and `var` here: a reload evaluates the file again, and `let`/`const` could not
// be declared twice.

var RINGS = ["inner", "middle", "outer"];

// Sets every ring to `value` (clamped to 0...10 by the progress model).
function setAll(value) {
    RINGS.forEach(function (ring) { progress[ring] = value; });
}

// Moves one ring to `target` in `steps` equal steps, `ms` milliseconds apart; observers
// (and `macro progress --watch`) see every step.
async function animateRing(ring, target, steps, ms) {
    if (RINGS.indexOf(ring) < 0) {
        throw new RangeError("unknown ring '" + ring + "'; use inner, middle or outer");
    }
    var start = progress[ring];
    for (var i = 1; i <= steps; i++) {
        await sleep(ms);
        progress[ring] = start + (target - start) * i / steps;
    }
    return progress[ring];
}
