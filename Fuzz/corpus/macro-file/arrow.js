async (a, ...rest) => { await sleep(1); return [a, rest] }
