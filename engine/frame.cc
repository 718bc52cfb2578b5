#include "engine/frame.h"
// Implementation pending (helper B).
