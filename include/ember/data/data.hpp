// Ember's data layer in one include: datasets and their wrappers, the DataLoader and batchers,
// and the sources (IDX / MNIST, CSV, image folders, SQLite). docs/DATA.md describes them.
#pragma once

#include "ember/data/csv.hpp"
#include "ember/data/dataloader.hpp"
#include "ember/data/dataset.hpp"
#include "ember/data/idx.hpp"
#include "ember/data/image.hpp"
#include "ember/data/sqlite.hpp"
