// Put every ring back to 0.
function() {
    progress.inner = 0;
    progress.middle = 0;
    progress.outer = 0;
}
