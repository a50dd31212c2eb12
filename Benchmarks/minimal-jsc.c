/* The smallest JavaScriptCore process: create a context, evaluate one line, exit.
   The baseline for `macro run --local` and for macrod's idle memory in `make bench`. */
#include <JavaScriptCore/JavaScript.h>
#include <stdio.h>

int main(void) {
    JSGlobalContextRef context = JSGlobalContextCreate(NULL);
    JSStringRef script = JSStringCreateWithUTF8CString("var inner = 0; inner = Math.min(10, inner + 0.5); inner");
    JSValueRef exception = NULL;
    JSValueRef result = JSEvaluateScript(context, script, NULL, NULL, 1, &exception);
    printf("%g\n", JSValueToNumber(context, result, NULL));
    JSStringRelease(script);
    JSGlobalContextRelease(context);
    return exception != NULL;
}
