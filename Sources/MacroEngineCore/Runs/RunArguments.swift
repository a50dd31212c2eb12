import MacroBase

/// A run's arguments as its draft keeps them: up to four numbers in place, anything else as the
/// array. A record of numbers then holds no reference to the array its request's parse made,
/// which is freed with the request, as without records (and its memory is reused while warm).
struct RunArguments {
    private var numbers: (Double, Double, Double, Double) = (0, 0, 0, 0)
    private var count = 0
    /// Set when the arguments are not up to four numbers.
    private var other: [MacroValue]?

    init(_ values: [MacroValue]) {
        guard values.count <= 4 else {
            other = values
            return
        }
        for value in values {
            guard case .number(let number) = value else {
                other = values
                count = 0
                return
            }
            switch count {
            case 0: numbers.0 = number
            case 1: numbers.1 = number
            case 2: numbers.2 = number
            default: numbers.3 = number
            }
            count += 1
        }
    }

    /// The arguments, as the call had them.
    var values: [MacroValue] {
        if let other { return other }
        return [numbers.0, numbers.1, numbers.2, numbers.3].prefix(count).map { .number($0) }
    }

    /// Roughly the bytes of their JSON (``RunLog/size(of:)-(MacroValue)`` each).
    var size: Int {
        guard let other else { return count * 8 }
        var bytes = 0
        for value in other { bytes += RunLog.size(of: value) }
        return bytes
    }
}
