// The CUDA backend's modules: NVRTC's compile of a generated source to a cubin for the driven
// device's architecture, the caches in memory (by source) and on disk (by a hash of source,
// architecture and NVRTC version: written to a temporary file and renamed into place, no lock,
// an entry that fails to load compiled again), and the parallel build of a function's requested
// modules (request_kernel, build_requested_kernels). The sources come from cuda_codegen.cpp and
// the kernel files.
#include "hypatia/backends/cuda/cuda_modules.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <mutex>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_codegen.h"
#include "hypatia/core/error.h"

namespace hypatia::cuda {
namespace {

/// A 128-bit hash of `parts`: xxHash64's round in four lanes over 32-byte stripes, merged twice
/// (a module's source starts with the 25 KB scalar-op table: FNV-1a byte by byte took about 1 ms
/// of each function's compile for its 30 requests). Stable across processes (the disk cache's
/// names).
std::array<uint64_t, 2> hash128(std::initializer_list<std::string_view> parts) {
  constexpr uint64_t P1 = 11400714785074694791ull, P2 = 14029467366897019727ull, P3 = 1609587929392839161ull,
                     P4 = 9650029242287828579ull;
  auto round = [](uint64_t acc, uint64_t w) { return std::rotl(acc + w * P2, 31) * P1; };
  auto avalanche = [](uint64_t h) {
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    return h ^ (h >> 32);
  };
  uint64_t v[4] = {P1 + P2, P2, 0, 0 - P1}, n = 0;
  auto word = [](const char* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
  };
  for (std::string_view s : parts) {
    size_t i = 0;
    for (; i + 32 <= s.size(); i += 32)
      for (int l = 0; l < 4; ++l) v[l] = round(v[l], word(s.data() + i + 8 * l));
    for (int l = 0; i + 8 <= s.size(); i += 8, ++l) v[l] = round(v[l], word(s.data() + i));
    uint64_t tail = 0;
    std::memcpy(&tail, s.data() + i, s.size() - i);
    v[3] = round(v[3], tail ^ (static_cast<uint64_t>(s.size()) << 3));
    n += s.size();
  }
  const uint64_t a = std::rotl(v[0], 1) + std::rotl(v[1], 7) + std::rotl(v[2], 12) + std::rotl(v[3], 18);
  const uint64_t b = (v[0] * P4) ^ std::rotl(v[1] * P3, 21) ^ std::rotl(v[2] * P1, 43) ^ (v[3] + P2);
  return {avalanche(a + n * P4), avalanche(b ^ (n * P1))};
}

std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

/// NVRTC on `source` for sm_<arch>; returns the program (destroyed by the caller) or throws with
/// the log.
nvrtcProgram nvrtc_run(const std::string& source, int arch, bool syntax_only) {
  const Nvrtc& nv = nvrtc();
  nvrtcProgram prog;
  nvrtcResult r = nv.create(&prog, source.c_str(), "hypatia_kernels.cu", 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) fail<Error>("NVRTC: nvrtcCreateProgram failed: ", nv.error_string(r));
  const std::string arch_opt = numbered("--gpu-architecture=sm_", arch);
  // No contraction into FMAs: every step rounds as the CPU's (and the unfused graph's) does.
  const char* opts[] = {arch_opt.c_str(), "--std=c++20", "-default-device", "--fmad=false", "-fdevice-syntax-only"};
  r = nv.compile(prog, syntax_only ? 5 : 4, opts);
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nv.log_size(prog, &n);
    std::string log(n, '\0');
    nv.log(prog, log.data());
    nv.destroy(&prog);
    fail<InternalError>("NVRTC could not compile a generated kernel (", nv.error_string(r), "):\n", log,
                        "\n--- the kernels (after the table prefix) ---\n",
                        source.size() > table_prefix().size() ? source.substr(table_prefix().size()) : source);
  }
  return prog;
}

}  // namespace

std::vector<char> compile_cubin(const std::string& source, int arch) {
  const Nvrtc& nv = nvrtc();
  nvrtcProgram prog = nvrtc_run(source, arch, false);
  size_t n = 0;
  nv.cubin_size(prog, &n);
  std::vector<char> cubin(n);
  nv.cubin(prog, cubin.data());
  nv.destroy(&prog);
  return cubin;
}

void check_source(const std::string& source) {
  nvrtcProgram prog = nvrtc_run(source, 90, true);
  nvrtc().destroy(&prog);
}

std::string module_cache_dir() {
  if (const char* d = std::getenv("HYPATIA_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/hypatia";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/hypatia";
  return "/tmp/hypatia-cache";
}

/// A module to build: read from the disk cache and loaded, or compiled and loaded (once, by
/// whichever thread first gets to it; the others wait).
struct ModuleJob {
  std::string key, source, what;  // (the source is dropped once built)
  std::mutex mu;
  std::condition_variable cv;
  bool started = false, done = false;
  cudaLibrary_t lib = nullptr;
  std::exception_ptr error;
};

namespace {

struct ModuleCache {
  std::mutex mu;
  std::unordered_map<std::string, cudaLibrary_t> libs;    // by key
  std::unordered_map<std::string, cudaKernel_t> kernels;  // by key + '/' + name
  // By key: requested, not built (held by the refs: a module whose refs are all gone, as those of
  // a function whose compile failed, is not built).
  std::unordered_map<std::string, std::weak_ptr<ModuleJob>> pending;
  ModuleCacheStats stats;
  ModuleLoader loader;  // (null functions: the CUDA runtime's)
};
ModuleCache& module_cache() {
  static ModuleCache* c = new ModuleCache();  // kept for the process: modules stay loaded
  return *c;
}

/// The modules the calling thread requested and has not built (build_requested_kernels).
std::vector<std::weak_ptr<ModuleJob>>& requested() {
  static thread_local std::vector<std::weak_ptr<ModuleJob>> jobs;
  return jobs;
}

constexpr char kMagic[8] = {'H', 'Y', 'P', 'C', 'U', 'B', '1', '\0'};

std::vector<char> read_entry(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  char magic[8];
  uint64_t size = 0;
  if (!f.read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0 || !f.read(reinterpret_cast<char*>(&size), 8) ||
      size == 0 || size > (uint64_t{1} << 30))
    return {};
  std::vector<char> data(size);
  if (!f.read(data.data(), static_cast<std::streamsize>(size))) return {};
  return data;
}

bool write_entry(const std::string& dir, const std::string& path, const std::vector<char>& cubin) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  static std::atomic<uint64_t> serial{0};  // (threads of one process write at once)
  const std::string tmp = path + numbered(".tmp", ::getpid()) + "-" +
                          std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "-" +
                          std::to_string(serial.fetch_add(1));
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) return false;
    const uint64_t size = cubin.size();
    f.write(kMagic, 8);
    f.write(reinterpret_cast<const char*>(&size), 8);
    f.write(cubin.data(), static_cast<std::streamsize>(size));
    if (!f.flush()) {
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, path, ec);  // atomic: readers see the old entry or the new one
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

bool runtime_load(const std::vector<char>& cubin, cudaLibrary_t* lib) {
  DeviceScope on_device;  // (the runtime's context: the driven device's, not the thread's)
  if (cudaLibraryLoadData(lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0) == cudaSuccess) return true;
  cudaGetLastError();
  return false;
}

cudaKernel_t runtime_kernel(cudaLibrary_t lib, const char* name) {
  DeviceScope on_device;
  cudaKernel_t k = nullptr;
  check(cudaLibraryGetKernel(&k, lib, name), "cudaLibraryGetKernel");
  return k;
}

/// The loader in use, with the runtime's functions where it names none (called under c.mu).
ModuleLoader current_loader(const ModuleCache& c) {
  ModuleLoader l = c.loader;
  if (!l.load) l.load = runtime_load;
  if (!l.kernel) l.kernel = runtime_kernel;
  return l;
}

/// The architecture modules are compiled for: the stand-in loader's, else the driven device's (which must
/// be usable; require_available says why not).
int loader_arch() {
  ModuleCache& c = module_cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.loader.load) return c.loader.arch;
  }
  require_available("CUDA kernel");
  return arch();
}

/// The module's library: from the disk cache, else compiled by NVRTC (and written to the cache).
cudaLibrary_t load_or_compile(const ModuleJob& j, const ModuleLoader& loader, int arch_) {
  ModuleCache& c = module_cache();
  const std::string dir = module_cache_dir() + "/cuda";
  const std::string path = dir + "/" + j.key + ".cubin";
  std::vector<char> cubin = read_entry(path);
  cudaLibrary_t lib = nullptr;
  if (!cubin.empty() && loader.load(cubin, &lib)) {
    std::lock_guard<std::mutex> lock(c.mu);
    ++c.stats.disk_hits;
    return lib;
  }
  const bool rejected = !cubin.empty();  // corrupt or stale: compiled again and replaced
  const auto t0 = std::chrono::steady_clock::now();
  cubin = compile_cubin(j.source, arch_);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const bool loaded = loader.load(cubin, &lib);
  const bool written = loaded && write_entry(dir, path, cubin);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.stats.disk_rejects += rejected;
    c.stats.compile_seconds += seconds;
    ++c.stats.compiles;
    c.stats.disk_writes += written;
  }
  if (!loaded) fail<Error>("CUDA: the compiled module of kernel ", j.what, " could not be loaded");
  return lib;
}

/// Builds `j` on the calling thread, or waits for the thread building it. Never throws: an error
/// is kept in the job.
void build(ModuleJob& j) {
  {
    std::unique_lock<std::mutex> lock(j.mu);
    if (j.started) {
      j.cv.wait(lock, [&] { return j.done; });
      return;
    }
    j.started = true;
  }
  ModuleCache& c = module_cache();
  cudaLibrary_t lib = nullptr;
  std::exception_ptr error;
  try {
    const int arch_ = loader_arch();
    ModuleLoader loader;
    {
      std::lock_guard<std::mutex> lock(c.mu);
      loader = current_loader(c);
    }
    lib = load_or_compile(j, loader, arch_);
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (!error) c.libs[j.key] = lib;  // (a module loaded again leaves the earlier one loaded: kernels may use it)
    if (auto it = c.pending.find(j.key); it != c.pending.end()) {
      const std::shared_ptr<ModuleJob> p = it->second.lock();
      if (!p || p.get() == &j) c.pending.erase(it);
    }
  }
  {
    std::lock_guard<std::mutex> lock(j.mu);
    j.lib = lib;
    j.error = error;
    j.done = true;
    std::string().swap(j.source);
  }
  j.cv.notify_all();
}

/// The kernel `name` of a built module (cached by key and name).
cudaKernel_t kernel_of(const std::string& key, cudaLibrary_t lib, const std::string& name) {
  ModuleCache& c = module_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (auto it = c.kernels.find(key + "/" + name); it != c.kernels.end()) return it->second;
  const cudaKernel_t k = current_loader(c).kernel(lib, name.c_str());
  c.kernels[key + "/" + name] = k;
  return k;
}

}  // namespace

ModuleCacheStats module_cache_stats() {
  ModuleCache& c = module_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.stats;
}

ModuleLoader set_module_loader(ModuleLoader loader) {
  ModuleCache& c = module_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return std::exchange(c.loader, loader);
}

int compile_threads() {
  static const int n = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    const int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    return std::clamp(cpus, 1, 8);
  }();
  return n;
}

std::string module_key(const std::string& source, int arch_) {
  int major = 0, minor = 0;
  nvrtc().version(&major, &minor);
  const std::string salt = numbered("sm_", arch_) + numbered(" nvrtc ", major) + "." + std::to_string(minor) + "\n";
  const std::array<uint64_t, 2> h = hash128({salt, source});
  return hex(h[0]) + hex(h[1]);
}

KernelRef request_kernel(const std::string& source, const std::string& name) {
  const std::string key = module_key(source, loader_arch());
  KernelRef ref;
  ref.s_ = std::make_shared<KernelRef::State>();
  ref.s_->name = name;
  ModuleCache& c = module_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (auto it = c.kernels.find(key + "/" + name); it != c.kernels.end()) {
    ++c.stats.memory_hits;
    ref.s_->kernel.store(it->second, std::memory_order_relaxed);
    return ref;
  }
  if (auto it = c.libs.find(key); it != c.libs.end()) {
    ++c.stats.memory_hits;
    const cudaKernel_t k = current_loader(c).kernel(it->second, name.c_str());
    c.kernels[key + "/" + name] = k;
    ref.s_->kernel.store(k, std::memory_order_relaxed);
    return ref;
  }
  std::weak_ptr<ModuleJob>& slot = c.pending[key];
  std::shared_ptr<ModuleJob> job = slot.lock();
  if (job) {
    ++c.stats.memory_hits;  // being built, or requested by another kernel
  } else {
    job = std::make_shared<ModuleJob>();
    job->key = key;
    job->source = source;
    job->what = name;
    slot = job;
  }
  ref.s_->job = job;
  auto& mine = requested();
  if (mine.size() >= 256)  // (a thread that never builds its requests: keep the list short)
    std::erase_if(mine, [](const std::weak_ptr<ModuleJob>& w) {
      const std::shared_ptr<ModuleJob> j = w.lock();
      if (!j) return true;
      std::lock_guard<std::mutex> l(j->mu);
      return j->done;
    });
  mine.push_back(job);
  return ref;
}

cudaKernel_t KernelRef::resolve() const {
  ModuleJob& j = *s_->job;
  build(j);
  if (j.error) std::rethrow_exception(j.error);
  const cudaKernel_t k = kernel_of(j.key, j.lib, s_->name);
  s_->kernel.store(k, std::memory_order_release);
  return k;
}

void build_requested_kernels() {
  std::vector<std::shared_ptr<ModuleJob>> jobs;
  for (const auto& w : requested())
    if (auto j = w.lock()) jobs.push_back(std::move(j));  // (gone: its kernels were dropped)
  requested().clear();
  if (jobs.empty()) return;
  std::sort(jobs.begin(), jobs.end());
  jobs.erase(std::unique(jobs.begin(), jobs.end()), jobs.end());
  // NVRTC is thread-safe and each program is independent: the modules compile at once, each
  // thread taking the next one; the calling thread is one of them.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();) build(*jobs[i]);
  };
  std::vector<std::thread> threads;
  const size_t n = std::min<size_t>(jobs.size(), static_cast<size_t>(compile_threads()));
  for (size_t t = 1; t < n; ++t) {
    try {
      threads.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no thread to be had: fewer build
    }
  }
  work();
  for (std::thread& t : threads) t.join();
  for (const auto& j : jobs)
    if (j->error) std::rethrow_exception(j->error);
}

cudaKernel_t get_kernel(const std::string& source, const std::string& name, bool memory_cache) {
  if (memory_cache) return request_kernel(source, name).get();
  ModuleJob j;  // built again, from disk or NVRTC, whatever the memory cache holds
  j.key = module_key(source, loader_arch());
  j.source = source;
  j.what = name;
  build(j);
  if (j.error) std::rethrow_exception(j.error);
  ModuleCache& c = module_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  const cudaKernel_t k = current_loader(c).kernel(j.lib, name.c_str());
  c.kernels[j.key + "/" + name] = k;
  return k;
}

}  // namespace hypatia::cuda
