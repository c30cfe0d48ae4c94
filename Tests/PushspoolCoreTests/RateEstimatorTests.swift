import Testing
import PushspoolCore

@Suite struct RateEstimatorTests {
    /// Over a window: the rate is over the last `window` seconds once there are more samples,
    /// and nothing is said before `minimumSpan` has passed.
    @Test func windowedRate() {
        var e = RateEstimator(window: 10, minimumSpan: 1)
        e.sample(at: 100, count: 0)
        #expect(e.rate == nil)
        e.sample(at: 100.5, count: 50)
        #expect(e.rate == nil)
        e.sample(at: 101, count: 100)
        #expect(e.rate == 100)
        for s in 2...30 { e.sample(at: 100 + Double(s), count: 100 + (s - 1) * 10) }   // slows to 10/s
        #expect(e.rate == 10)
    }

    /// A window of 0: the rate since the previous sample (a checkpoint's "last second").
    @Test func sincePreviousSample() {
        var e = RateEstimator(window: 0, minimumSpan: 0.2)
        e.sample(at: 0, count: 0)
        e.sample(at: 1, count: 500)
        #expect(e.rate == 500)
        e.sample(at: 2, count: 600)
        #expect(e.rate == 100)
        e.sample(at: 2.1, count: 700)          // too close to the previous one to say
        #expect(e.rate == nil)
    }

    @Test func secondsLeft() {
        #expect(RateEstimator.secondsLeft(targets: 1000, finished: 200, rate: 100) == 8)
        #expect(RateEstimator.secondsLeft(targets: nil, finished: 200, rate: 100) == nil)
        #expect(RateEstimator.secondsLeft(targets: 1000, finished: 1000, rate: 100) == nil)
        #expect(RateEstimator.secondsLeft(targets: 1000, finished: 0, rate: 0) == nil)
        #expect(RateEstimator.secondsLeft(targets: 1000, finished: 0, rate: nil) == nil)
    }
}
