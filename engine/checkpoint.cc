#include "engine/checkpoint.h"
// Implementation pending (helper B).
