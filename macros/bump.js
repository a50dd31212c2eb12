// bump(channel, amount): add `amount` (default 1) to one ring and return its new value.
//   macro run bump inner 2.5
function bump(channel, amount) {
    if (!(channel in progress)) {
        throw new RangeError("unknown channel '" + channel + "'; use inner, middle or outer");
    }
    progress[channel] += (amount === undefined ? 1 : amount);
    return progress[channel];
}
