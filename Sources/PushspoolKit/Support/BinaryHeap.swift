/// A binary heap whose top is the element `before` puts first: O(log n) to add or take the top.
/// The retry timer keeps its earliest retry on top; a folder scan keeps the entry it would drop
/// first on top of a bounded set.
struct BinaryHeap<Element> {
    private(set) var items: [Element] = []
    /// Whether `a` belongs nearer the top than `b`.
    let before: (Element, Element) -> Bool

    init(before: @escaping (Element, Element) -> Bool) {
        self.before = before
    }

    var top: Element? { items.first }
    var count: Int { items.count }
    var isEmpty: Bool { items.isEmpty }

    mutating func push(_ e: Element) {
        items.append(e)
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard before(items[i], items[parent]) else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    /// Takes the top away (the heap must not be empty).
    mutating func pop() -> Element {
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        siftDown(from: 0)
        return top
    }

    /// Puts `e` in the top's place (the heap must not be empty).
    mutating func replaceTop(with e: Element) {
        items[0] = e
        siftDown(from: 0)
    }

    private mutating func siftDown(from start: Int) {
        var i = start
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < items.count, before(items[l], items[m]) { m = l }
            if r < items.count, before(items[r], items[m]) { m = r }
            if m == i { return }
            items.swapAt(i, m)
            i = m
        }
    }
}
