// macro-fuzz TARGET [ARGS...]: with -sanitize=fuzzer -DFUZZING (make fuzz) it hands ARGS to
// libFuzzer; in an ordinary build it replays the files and directories in ARGS through TARGET
// (a regression run of a corpus). Targets: rpc-line, macro-file.
import Foundation
import MacroFuzz

#if FUZZING
import CLibFuzzer
#endif

let arguments = CommandLine.arguments
guard arguments.count >= 2, let target = FuzzTargets.all[arguments[1]] else {
    FileHandle.standardError.write(
        Data("usage: macro-fuzz TARGET [libFuzzer options | corpus files and directories]\ntargets: \(FuzzTargets.all.keys.sorted().joined(separator: ", "))\n".utf8))
    exit(64)
}

#if FUZZING
/// The target libFuzzer calls (set before the driver starts, read only afterwards).
nonisolated(unsafe) var chosen = target

/// libFuzzer's runtime needs this symbol even when its driver is started with a callback.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    chosen(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

var argc = Int32(arguments.count - 1)
var argv: [UnsafeMutablePointer<CChar>?] = ([arguments[0]] + arguments.dropFirst(2)).map { strdup($0) } + [nil]
argv.withUnsafeMutableBufferPointer { buffer in
    var pointer = buffer.baseAddress
    exit(
        LLVMFuzzerRunDriver(&argc, &pointer) { data, size in
            chosen(UnsafeRawBufferPointer(start: data, count: size))
            return 0
        })
}
#else
var files: [String] = []
for path in arguments.dropFirst(2) {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
        FileHandle.standardError.write(Data("macro-fuzz: no such file: \(path)\n".utf8))
        exit(66)
    }
    if isDirectory.boolValue {
        files += ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { "\(path)/\($0)" }
    } else {
        files.append(path)
    }
}
for file in files {
    let data = FileManager.default.contents(atPath: file) ?? Data()
    data.withUnsafeBytes { target($0) }
}
print("macro-fuzz \(arguments[1]): \(files.count) inputs replayed, no failure")
#endif
