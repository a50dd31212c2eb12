function a() {}
function b() {}
