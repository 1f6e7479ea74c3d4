// Data loading alone, in images/s (issue 5): is the loader fast enough never to starve the
// Fashion-MNIST CNN (about 4,600 images/s for PyTorch's training step here)?
//   BM_fashion_mnist_decode          gunzip + parse the 60,000 training images (IDX, zlib)
//   BM_fashion_mnist_epoch/workers   one shuffled epoch, batch 64, items -> [64, 1, 28, 28] f32
//                                    normalised + i64 labels, with 0, 1 and 2 worker threads
//   BM_image_folder_epoch/workers    the same from PNG files (2,000 of them, decoded by libpng)
// Needs dataset-fashion-mnist (/usr/share/datasets/fashion-mnist, or $EMBER_FASHION_MNIST_DIR).
#include <benchmark/benchmark.h>

#include <ember/data/data.hpp>
#include <filesystem>
#include <string>

namespace {

using namespace ember;

bool have_fashion_mnist(benchmark::State& state) {
  const auto dir = std::filesystem::path(data::FashionMnist::default_dir());
  if (std::filesystem::exists(dir / "train-images-idx3-ubyte.gz") ||
      std::filesystem::exists(dir / "train-images-idx3-ubyte"))
    return true;
  state.SkipWithError("Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)");
  return false;
}

std::shared_ptr<const data::ImageBatcher> fashion_batcher() {
  return std::make_shared<data::ImageBatcher>(
      data::ImageBatcherConfig().normalize({0.2860f}, {0.3530f}));
}

void BM_fashion_mnist_decode(benchmark::State& state) {
  if (!have_fashion_mnist(state)) return;
  const auto dir = std::filesystem::path(data::FashionMnist::default_dir());
  std::string path = (dir / "train-images-idx3-ubyte.gz").string();
  if (!std::filesystem::exists(path)) path = (dir / "train-images-idx3-ubyte").string();
  int64_t images = 0;
  for (auto _ : state) {
    data::IdxArray a = data::read_idx(path);
    images += a.dims[0];
    benchmark::DoNotOptimize(a.data.data());
  }
  state.SetItemsProcessed(images);
}

int64_t run_epoch(const data::DataLoader<data::ImageItem, data::ImageBatch>& loader, uint64_t e) {
  int64_t n = 0;
  for (data::ImageBatch& b : loader.epoch(e)) {
    n += b.images.size(0);
    benchmark::DoNotOptimize(b.images.dyn().raw().storage.get());
  }
  return n;
}

void BM_fashion_mnist_epoch(benchmark::State& state) {
  if (!have_fashion_mnist(state)) return;
  const auto train = data::FashionMnist::train();
  data::DataLoader loader(train, fashion_batcher(),
                          data::DataLoaderConfig().batch_size(64).shuffle(1).workers(
                              static_cast<size_t>(state.range(0))));
  int64_t images = 0;
  uint64_t epoch = 0;
  for (auto _ : state) images += run_epoch(loader, epoch++);
  state.SetItemsProcessed(images);
}

// 2,000 Fashion-MNIST training images written once as PNG files in 10 class folders.
std::string png_folder() {
  static const std::string root = [] {
    const auto dir = std::filesystem::temp_directory_path() / "ember_data_bench_png";
    std::filesystem::remove_all(dir);
    const auto train = data::FashionMnist::train();
    for (size_t i = 0; i < 2000; ++i) {
      const data::ImageItem im = train->at(i);
      const auto cls = dir / std::to_string(im.label);
      std::filesystem::create_directories(cls);
      data::write_png((cls / (std::to_string(i) + ".png")).string(), im);
    }
    return dir.string();
  }();
  return root;
}

void BM_image_folder_epoch(benchmark::State& state) {
  if (!have_fashion_mnist(state)) return;
  const auto folder = data::ImageFolder::open(png_folder(), 1);
  data::DataLoader loader(folder, fashion_batcher(),
                          data::DataLoaderConfig().batch_size(64).shuffle(1).workers(
                              static_cast<size_t>(state.range(0))));
  int64_t images = 0;
  uint64_t epoch = 0;
  for (auto _ : state) images += run_epoch(loader, epoch++);
  state.SetItemsProcessed(images);
}

}  // namespace

BENCHMARK(BM_fashion_mnist_decode)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_fashion_mnist_epoch)
    ->ArgName("workers")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_image_folder_epoch)
    ->ArgName("workers")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
