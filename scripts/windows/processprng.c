/*
 * A stand-in bcryptprimitives.dll for running zeroclaw.exe under Wine 8.0.
 *
 * Rust's standard library draws its random bytes from ProcessPrng in bcryptprimitives.dll
 * (present since Windows 10). Wine 8.0 does not export it, so the executable would not
 * load. This DLL exports ProcessPrng on top of BCryptGenRandom with the system RNG; it is
 * placed next to zeroclaw.exe by scripts/windows-test.sh and is never needed on Windows.
 *
 * Build: x86_64-w64-mingw32-gcc -shared -O2 -o bcryptprimitives.dll processprng.c -lbcrypt
 */
#include <windows.h>
#include <bcrypt.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    /* BCryptGenRandom takes a ULONG length: fill larger requests in pieces. */
    while (len > 0) {
        ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!BCRYPT_SUCCESS(BCryptGenRandom(NULL, data, n, BCRYPT_USE_SYSTEM_PREFERRED_RNG)))
            return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
