// level(name): glide every ring to a named level of resources/levels.json.
//   macro run level high
// A macro written as a module: it imports `glide` from lib/easing.js and reads a resource.
// Edit lib/easing.js or resources/levels.json and the next call uses the new version.
import { glide } from "./lib/easing.js";

/** @param {string} name */
export default async function level(name) {
    const levels = resource("levels.json");
    if (!(name in levels)) {
        throw new RangeError("unknown level '" + name + "'; use " + Object.keys(levels).join(", "));
    }
    const rings = /** @type {const} */ (["inner", "middle", "outer"]);
    await Promise.all(rings.map((ring) => glide(ring, levels[name], 4, 25)));
    return levels[name];
}
