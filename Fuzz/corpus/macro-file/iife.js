(function () { return function () { return 1 } })()
