(function () { while (true) {} })()
