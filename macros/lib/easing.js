// A module: macros and other modules import what it exports, by a path relative to the
// importing file (`import { glide } from "./lib/easing.js"`). Saving it reloads it and every
// file that imports it, as one swap; if the new version does not load, the old one keeps
// serving. See docs/macros.md, "Modules and resources".

/** Eases `t` (0...1) in and out: slow at both ends. */
export function easeInOut(t) {
    return t < 0.5 ? 2 * t * t : 1 - Math.pow(-2 * t + 2, 2) / 2;
}

/**
 * Moves one ring to `target` in `steps` eased steps, `ms` milliseconds apart; observers (and
 * `macro progress --watch`) see every step.
 * @param {"inner" | "middle" | "outer"} ring
 * @param {number} target
 * @param {number} steps
 * @param {number} ms
 */
export async function glide(ring, target, steps, ms) {
    const start = progress[ring];
    for (let i = 1; i <= steps; i++) {
        await sleep(ms);
        progress[ring] = start + (target - start) * easeInOut(i / steps);
    }
    return progress[ring];
}
