/* libidn2: internationalised host names (IDNA2008 with UTS #46) to their ASCII form, xn--…. */
#include <idn2.h>
