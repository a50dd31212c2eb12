import CJavaScriptCore

#if canImport(Glibc)
import Glibc
#endif

/// The minimal server's JavaScript: one context holding the benchmark macro (the source macrod
/// runs, ``Macrod/addMacro``) and ``MinimalProgress``'s `progress` object. One call is one
/// JSObjectCallAsFunction, its arguments made from the request's bytes and its result written
/// straight into the reply.
final class MinimalMacroCall {
    /// The macro's name, as requests spell it.
    let name: [UInt8]
    private let context: JSGlobalContextRef
    private let function: JSObjectRef
    /// The most arguments a call takes (they are made in stack memory).
    static let maximumArguments = 16

    init(name: String, source: String) throws {
        self.name = Array(name.utf8)
        context = JSGlobalContextCreate(nil)
        try MinimalProgress.install(in: context)
        function = try MinimalProgress.evaluate("(\(source))", in: context)
        JSValueProtect(context, function)
    }

    deinit {
        JSValueUnprotect(context, function)
        JSGlobalContextRelease(context)
    }

    /// Calls the macro with the elements of the JSON array at `arguments` in `line` and appends
    /// its result as JSON to `out`. False, with nothing appended, when an argument cannot be
    /// read or the macro threw.
    func call(line: UnsafeBufferPointer<UInt8>, arguments: Range<Int>?, to out: inout [UInt8]) -> Bool {
        withUnsafeTemporaryAllocation(of: JSValueRef?.self, capacity: Self.maximumArguments) { values in
            var count = 0
            if let arguments {
                let read = MinimalCallScanner.elements(line, array: arguments) { element in
                    guard count < Self.maximumArguments, let value = self.value(line, element) else { return false }
                    values[count] = value
                    count += 1
                    return true
                }
                guard read else { return false }
            }
            var exception: JSValueRef?
            let result = JSObjectCallAsFunction(context, function, nil, count, count == 0 ? nil : UnsafePointer(values.baseAddress), &exception)
            guard exception == nil, let result else { return false }
            appendJSON(result, to: &out)
            return true
        }
    }

    /// The JavaScript value of one JSON element: numbers parsed directly, anything else through
    /// JSValueMakeFromJSONString.
    private func value(_ line: UnsafeBufferPointer<UInt8>, _ element: Range<Int>) -> JSValueRef? {
        let first = line[element.lowerBound]
        if first == UInt8(ascii: "-") || (first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")), element.count < 64 {
            // strtod on a NUL-terminated copy: the whole element must be the number.
            return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { text -> JSValueRef? in
                for i in 0..<element.count { text[i] = CChar(bitPattern: line[element.lowerBound + i]) }
                text[element.count] = 0
                var end: UnsafeMutablePointer<CChar>?
                let number = strtod(text.baseAddress!, &end)
                guard end == text.baseAddress! + element.count else { return nil }
                return JSValueMakeNumber(context, number)
            }
        }
        let json = JSStringCreateWithUTF8CString(String(decoding: UnsafeBufferPointer(rebasing: line[element]), as: UTF8.self))
        defer { JSStringRelease(json) }
        return JSValueMakeFromJSONString(context, json)
    }

    /// Appends `value` as JSON: numbers as macrod spells them, undefined as `null`, anything
    /// else through JSValueCreateJSONString.
    private func appendJSON(_ value: JSValueRef, to out: inout [UInt8]) {
        if JSValueIsNumber(context, value) {
            MinimalReply.number(JSValueToNumber(context, value, nil), to: &out)
            return
        }
        guard !JSValueIsUndefined(context, value), let json = JSValueCreateJSONString(context, value, 0, nil) else {
            MinimalReply.append("null", to: &out)
            return
        }
        defer { JSStringRelease(json) }
        let size = JSStringGetMaximumUTF8CStringSize(json)
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: size) { text in
            let written = JSStringGetUTF8CString(json, text.baseAddress, size)
            // `written` counts the terminating NUL.
            text.withMemoryRebound(to: UInt8.self) { out.append(contentsOf: $0.prefix(max(0, written - 1))) }
        }
    }
}
