// Fill every ring to the top.
function() {
    progress.inner = 10;
    progress.middle = 10;
    progress.outer = 10;
}
