// oneDNN (Debian's, built on OpenMP) called from Hypatia's pool threads: each call runs on its
// calling thread alone, so that oneDNN starts no OpenMP team of its own (libgomp's teams spin and
// wait for descheduled members on a busy machine: issue 9).
#pragma once

// libgomp's, declared here so that no OpenMP flag reaches the files that include this.
extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);

namespace hypatia {

/// Sets the calling thread's OpenMP thread count to 1 for its lifetime (oneDNN reads it per call)
/// and restores the previous count (a user's own OpenMP setting is kept).
class OneOmpThread {
 public:
  OneOmpThread() : prev_(omp_get_max_threads()) {
    if (prev_ != 1) omp_set_num_threads(1);
  }
  ~OneOmpThread() {
    if (prev_ != 1) omp_set_num_threads(prev_);
  }
  OneOmpThread(const OneOmpThread&) = delete;
  OneOmpThread& operator=(const OneOmpThread&) = delete;

 private:
  int prev_;
};

}  // namespace hypatia
