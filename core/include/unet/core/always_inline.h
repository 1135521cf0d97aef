// UNET_ALWAYS_INLINE: a data-path step inlined into its caller whatever the compiler's size
// heuristics say.
//
// For the steps of a progress call (core's poll(), uam's arrival of a message) and the codecs
// they call: each is a few dozen instructions, and under emulation (QEMU's TCG, where CI and most
// users run SoftRoCE) the return of a call is an indirect branch that costs more than the
// instructions around it. Put it on the definition of a function declared inline, in the one
// translation unit that calls it (or in a header).
#pragma once

#define UNET_ALWAYS_INLINE [[gnu::always_inline]] inline
