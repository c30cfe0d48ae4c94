import Testing
@testable import PushspoolCore
