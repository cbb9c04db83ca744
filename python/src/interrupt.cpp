#include "interrupt.h"

#include <Python.h>
#include <signal.h>

#include <chrono>

namespace hypatia::python {
namespace {

std::atomic<bool> g_sigint{false};
// The handler the wrapper chains to. Written only while the wrapper is not installed (so never
// while it can run), read by the wrapper.
struct sigaction g_wrapped;
unsigned long g_main_thread = 0;
std::chrono::steady_clock::time_point g_last_check;

void on_sigint(int sig, siginfo_t* info, void* context) {
  g_sigint.store(true, std::memory_order_relaxed);
  if (g_wrapped.sa_flags & SA_SIGINFO)
    g_wrapped.sa_sigaction(sig, info, context);
  else if (g_wrapped.sa_handler != SIG_DFL && g_wrapped.sa_handler != SIG_IGN)
    g_wrapped.sa_handler(sig);
}

bool is_wrapper(const struct sigaction& a) { return (a.sa_flags & SA_SIGINFO) && a.sa_sigaction == on_sigint; }

/// Wraps the current SIGINT handler when it is a function (Python's): SIG_DFL and SIG_IGN are
/// left as they are (the process dies, or ignores Ctrl-C, whatever hypatia does).
void wrap_handler() {
  struct sigaction cur;
  if (sigaction(SIGINT, nullptr, &cur) != 0 || is_wrapper(cur)) return;
  if (!(cur.sa_flags & SA_SIGINFO) && (cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN)) return;
  g_wrapped = cur;
  struct sigaction mine = cur;
  mine.sa_flags |= SA_SIGINFO;
  mine.sa_sigaction = on_sigint;
  sigaction(SIGINT, &mine, nullptr);
}

}  // namespace

void init_interrupt() {
  g_main_thread = PyThread_get_thread_ident();
  if (PyObject* threading = PyImport_ImportModule("threading")) {
    if (PyObject* main = PyObject_CallMethod(threading, "main_thread", nullptr)) {
      if (PyObject* ident = PyObject_GetAttrString(main, "ident")) {
        g_main_thread = PyLong_AsUnsignedLong(ident);
        Py_DECREF(ident);
      }
      Py_DECREF(main);
    }
    Py_DECREF(threading);
  }
  PyErr_Clear();
  wrap_handler();
  g_last_check = std::chrono::steady_clock::now();
}

const std::atomic<bool>* begin_interruptible_call() {
  if (PyThread_get_thread_ident() != g_main_thread) return nullptr;
  const auto now = std::chrono::steady_clock::now();
  if (now - g_last_check > std::chrono::milliseconds(50)) {
    g_last_check = now;
    wrap_handler();
  }
  // Any earlier signal was handled by the caller's PyErr_CheckSignals.
  g_sigint.store(false, std::memory_order_relaxed);
  return &g_sigint;
}

bool finish_interrupted_call() {
  g_sigint.store(false, std::memory_order_relaxed);
  if (PyErr_CheckSignals() < 0) return true;
  return false;
}

}  // namespace hypatia::python
