// SIGINT and SIGTERM, taken by one thread of a daemon: blocked by the constructor, so every
// thread started after it inherits the mask and only Wait() sees them; Unblock() gives them
// back their default action (a failed start must not leave the process deaf to them).
#pragma once

#include <csignal>

namespace cxds {

class TerminationSignals {
 public:
  TerminationSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  }
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;

  // Blocks until one arrives; returns its number.
  int Wait() {
    int signal = 0;
    sigwait(&set_, &signal);
    return signal;
  }
  void Unblock() { pthread_sigmask(SIG_UNBLOCK, &set_, nullptr); }

 private:
  sigset_t set_;
};

}  // namespace cxds
