// Thread-safety annotations: clang's -Wthread-safety checks, at compile time, that shared
// state is only touched with its mutex held (https://clang.llvm.org/docs/
// ThreadSafetyAnalysis.html). The macros expand to nothing on other compilers.
//
//   class Counter {
//    public:
//     void Add(int n) EXCLUDES(mu_) { MutexLock l(&mu_); AddLocked(n); }
//    private:
//     void AddLocked(int n) REQUIRES(mu_) { total_ += n; }
//     Mutex mu_;
//     int64_t total_ GUARDED_BY(mu_) = 0;
//   };
//
// GUARDED_BY(mu) on a member: reads need mu held (shared or exclusive), writes exclusive.
// PT_GUARDED_BY(mu) on a pointer: the same for what it points to (the pointer itself is
// free). REQUIRES(mu) on a function: callers must hold mu; EXCLUDES(mu): callers must not
// (the function takes it). ACQUIRE/RELEASE/TRY_ACQUIRE mark functions that take or drop a
// capability; CAPABILITY marks a lock type, SCOPED_CAPABILITY an RAII holder of one.
// NO_THREAD_SAFETY_ANALYSIS turns the check off for one function: use it only where the
// lock pattern is beyond the analysis, with a comment saying why.
//
// `make threadsafety` builds the library with clang and -Werror=thread-safety (.ci/run
// runs it); src/core/mutex.h is the annotated mutex to use with these.
#ifndef SLUICE_CORE_THREAD_ANNOTATIONS_H_
#define SLUICE_CORE_THREAD_ANNOTATIONS_H_

#if defined(__clang__)
#define SLUICE_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define SLUICE_THREAD_ANNOTATION_(x)
#endif

#ifndef CAPABILITY
#define CAPABILITY(x) SLUICE_THREAD_ANNOTATION_(capability(x))
#endif

#ifndef SCOPED_CAPABILITY
#define SCOPED_CAPABILITY SLUICE_THREAD_ANNOTATION_(scoped_lockable)
#endif

#ifndef GUARDED_BY
#define GUARDED_BY(x) SLUICE_THREAD_ANNOTATION_(guarded_by(x))
#endif

#ifndef PT_GUARDED_BY
#define PT_GUARDED_BY(x) SLUICE_THREAD_ANNOTATION_(pt_guarded_by(x))
#endif

#ifndef ACQUIRED_BEFORE
#define ACQUIRED_BEFORE(...) SLUICE_THREAD_ANNOTATION_(acquired_before(__VA_ARGS__))
#endif

#ifndef ACQUIRED_AFTER
#define ACQUIRED_AFTER(...) SLUICE_THREAD_ANNOTATION_(acquired_after(__VA_ARGS__))
#endif

#ifndef REQUIRES
#define REQUIRES(...) SLUICE_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#endif

#ifndef REQUIRES_SHARED
#define REQUIRES_SHARED(...) \
  SLUICE_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
#endif

#ifndef ACQUIRE
#define ACQUIRE(...) SLUICE_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#endif

#ifndef ACQUIRE_SHARED
#define ACQUIRE_SHARED(...) \
  SLUICE_THREAD_ANNOTATION_(acquire_shared_capability(__VA_ARGS__))
#endif

#ifndef RELEASE
#define RELEASE(...) SLUICE_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#endif

#ifndef RELEASE_SHARED
#define RELEASE_SHARED(...) \
  SLUICE_THREAD_ANNOTATION_(release_shared_capability(__VA_ARGS__))
#endif

#ifndef TRY_ACQUIRE
#define TRY_ACQUIRE(...) SLUICE_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
#endif

#ifndef TRY_ACQUIRE_SHARED
#define TRY_ACQUIRE_SHARED(...) \
  SLUICE_THREAD_ANNOTATION_(try_acquire_shared_capability(__VA_ARGS__))
#endif

#ifndef EXCLUDES
#define EXCLUDES(...) SLUICE_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#endif

#ifndef ASSERT_CAPABILITY
#define ASSERT_CAPABILITY(x) SLUICE_THREAD_ANNOTATION_(assert_capability(x))
#endif

#ifndef ASSERT_SHARED_CAPABILITY
#define ASSERT_SHARED_CAPABILITY(x) SLUICE_THREAD_ANNOTATION_(assert_shared_capability(x))
#endif

#ifndef RETURN_CAPABILITY
#define RETURN_CAPABILITY(x) SLUICE_THREAD_ANNOTATION_(lock_returned(x))
#endif

#ifndef NO_THREAD_SAFETY_ANALYSIS
#define NO_THREAD_SAFETY_ANALYSIS SLUICE_THREAD_ANNOTATION_(no_thread_safety_analysis)
#endif

#endif  // SLUICE_CORE_THREAD_ANNOTATIONS_H_
