package load

import "time"

// timerKickPeriod is how often a paced load wakes Go's scheduler so that
// the producers' timers fire on time.
//
// Why: in a process with nothing else to do, Go's runtime waits for its
// next timer in epoll_wait, whose timeout is whole milliseconds: a producer
// sleeping 80 µs until its next message (50,000 msg/s over 4 producers)
// woke up to 1 ms late, and that lateness is in every latency ackcheck
// reports (latency counts from the schedule). A timerfd firing every
// period, in the same epoll set, ends each such wait early; the runtime
// then runs every timer that is due. BenchmarkPacing50k (4 producers,
// 50,000 msg/s, a driver that acks at once, nothing else running), this
// project's 2-core machine:
//
//	period           lag p50   lag p99        CPU-s per 1M messages
//	none             0.48 ms   1.10-1.13 ms   3.8-4.0 (three runs)
//	800 µs           0.34 ms   0.78-0.89 ms   4.1-4.5 (four runs)
//	500 µs (tried)   0.21 ms   0.51 ms        5.1
//	300 µs (tried)   0.12 ms   0.37 ms        6.4
//
// Each wake costs a few microseconds of context switches here, and the
// CPU is the broker's too when it shares the machine: 800 µs keeps p99
// under 1 ms for about a tenth more CPU.
const timerKickPeriod = 800 * time.Microsecond
