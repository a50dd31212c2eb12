// The seed's template: move each ring up by a random amount (values clamp at 10).
function random() {
    var currentInner = getInnerProgress();
    var currentMiddle = getMiddleProgress();
    var currentOuter = getOuterProgress();

    setInnerProgress(currentInner + Math.random());
    setMiddleProgress(currentMiddle + Math.random());
    setOuterProgress(currentOuter + Math.random());
}
