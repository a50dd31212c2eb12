// animate(ring, target): move one ring (default outer) to `target` (default 10) in ten steps of
// 50 ms. Run `macro progress --watch` in another terminal to see it climb.
//   macro run animate inner 8
async function animate(ring, target) {
    ring = ring === undefined ? "outer" : ring;
    return await animateRing(ring, target === undefined ? 10 : target, 10, 50);
}
