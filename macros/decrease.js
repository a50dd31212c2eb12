// Move each ring down by a random amount (values clamp at 0).
function decrease() {
    setInnerProgress(getInnerProgress() - Math.random());
    setMiddleProgress(getMiddleProgress() - Math.random());
    setOuterProgress(getOuterProgress() - Math.random());
}
