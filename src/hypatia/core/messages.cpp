#include "hypatia/core/messages.h"

#include <cstdio>
#include <memory>
#include <mutex>

namespace hypatia {
namespace {

void default_sink(MessageChannel channel, const std::string& text) {
  switch (channel) {
    case MessageChannel::Warning:
      std::fprintf(stderr, "hypatia warning: %s\n", text.c_str());
      break;
    case MessageChannel::Output:
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      break;
    case MessageChannel::Diagnostic:
      std::fwrite(text.data(), 1, text.size(), stderr);
      break;
  }
}

struct Sinks {
  std::mutex mu;
  std::shared_ptr<const MessageSink> sink;  // null: the defaults
};
Sinks& sinks() {
  static Sinks* s = new Sinks;  // never destroyed: messages may come from static destructors
  return *s;
}

}  // namespace

void emit_message(MessageChannel channel, const std::string& text) {
  std::shared_ptr<const MessageSink> s;
  {
    std::lock_guard<std::mutex> lock(sinks().mu);
    s = sinks().sink;
  }
  if (s && *s)
    (*s)(channel, text);
  else
    default_sink(channel, text);
}

void emit_default_message(MessageChannel channel, const std::string& text) { default_sink(channel, text); }

void set_message_sink(MessageSink sink) {
  auto p = sink ? std::make_shared<const MessageSink>(std::move(sink)) : nullptr;
  std::lock_guard<std::mutex> lock(sinks().mu);
  sinks().sink = std::move(p);
}

}  // namespace hypatia
