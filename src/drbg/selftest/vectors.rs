//! The known answers the self-tests compare with, copied unchanged from the published files
//! (each named with its line): per SP 800-90A mechanism one CAVP record of each family
//! (no_reseed, pr_false, pr_true), and one vector per primitive of the other generators.

/// An SP 800-90A known answer from a CAVP no_reseed record without personalization string or
/// additional input: entropy, nonce, and the second Generate's output (512 bits for CTR_DRBG,
/// 1024 for SHA-256, 2048 for SHA-512).
pub(super) struct NoReseedKat {
    pub(super) entropy: &'static str,
    pub(super) nonce: &'static str,
    pub(super) returned: &'static str,
}

/// A CAVP pr_false record without personalization string: instantiate, reseed with
/// `entropy_reseed` and `additional_reseed`, two Generates with `additional[0]` and
/// `additional[1]`, the second's output `returned`.
pub(super) struct ReseedKat {
    pub(super) entropy: &'static str,
    pub(super) nonce: &'static str,
    pub(super) entropy_reseed: &'static str,
    pub(super) additional_reseed: &'static str,
    pub(super) additional: [&'static str; 2],
    pub(super) returned: &'static str,
}

/// A CAVP pr_true record without personalization string: instantiate, then twice a reseed with
/// `entropy_pr[i]` and `additional[i]` (the reseed prediction resistance forces takes the
/// request's additional input, SP 800-90A 9.3.1) and a Generate without additional input; the
/// second Generate's output `returned`.
pub(super) struct PrKat {
    pub(super) entropy: &'static str,
    pub(super) nonce: &'static str,
    pub(super) entropy_pr: [&'static str; 2],
    pub(super) additional: [&'static str; 2],
    pub(super) returned: &'static str,
}

/// The three known answers of one SP 800-90A mechanism.
pub(super) struct MechanismKats {
    pub(super) no_reseed: NoReseedKat,
    pub(super) reseed: ReseedKat,
    pub(super) pr: PrKat,
}

// ---------- SP 800-90A: no_reseed ----------

/// NIST CAVP CTR_DRBG.rsp (no_reseed), `[AES-256 use df]`, first group (no personalization string, no
/// additional input), COUNT = 0: tests/data/ctr_drbg_no_reseed.rsp, line 2064 (group header at 2056).
const AES256_GENERATE: NoReseedKat = NoReseedKat {
    entropy: "36401940fa8b1fba91a1661f211d78a0b9389a74e5bccfece8d766af1a6d3b14",
    nonce: "496f25b0f1301b4f501be30380a137eb",
    returned: "5862eb38bd558dd978a696e6df164782ddd887e7e9a6c9f3f1fbafb78941b535\
               a64912dfd224c6dc7454e5250b3d97165e16260c2faf1cc7735cb75fb4f07e1d",
};

/// NIST CAVP CTR_DRBG.rsp (no_reseed), `[AES-192 use df]`, group without inputs, COUNT = 0:
/// tests/data/ctr_drbg_aes192_no_reseed.rsp, line 1040 (group header at 1032).
const AES192_GENERATE: NoReseedKat = NoReseedKat {
    entropy: "4d5be91999c1dc6ae2e5f6deb563b125bc8439e85f2576fc",
    nonce: "11e1c2d4d4f73b9c457fcaa06f4af22e",
    returned: "53c2c0237edf9425842ab91c63723616e98bb6c12d16bf8087772d0a080d289f\
               8b4f35dfdaef5b11cd588814c6bc01dc7e23b9bdd39c0aee7407f71054a7c9aa",
};

/// NIST CAVP CTR_DRBG.rsp (no_reseed), `[AES-128 use df]`, first group (no personalization string, no
/// additional input), COUNT = 0: tests/data/ctr_drbg_no_reseed.rsp, line 16 (group header at 8).
const AES128_GENERATE: NoReseedKat = NoReseedKat {
    entropy: "890eb067acf7382eff80b0c73bc872c6",
    nonce: "aad471ef3ef1d203",
    returned: "a5514ed7095f64f3d0d3a5760394ab42062f373a25072a6ea6bcfd8489e94af6\
               cf18659fea22ed1ca0a9e33f718b115ee536b12809c31b72b08ddd8be1910fa3",
};

/// NIST CAVP Hash_DRBG.rsp (no_reseed), `[SHA-256]`, first group (no personalization string, no
/// additional input), COUNT = 0: tests/data/hash_drbg_no_reseed.rsp, line 4112 (group header at 4104).
const HASH_SHA256_GENERATE: NoReseedKat = NoReseedKat {
    entropy: "a65ad0f345db4e0effe875c3a2e71f42c7129d620ff5c119a9ef55f05185e0fb",
    nonce: "8581f9317517276e06e9607ddbcbcc2e",
    returned: "d3e160c35b99f340b2628264d1751060e0045da383ff57a57d73a673d2b8d80d\
               aaf6a6c35a91bb4579d73fd0c8fed111b0391306828adfed528f018121b3febd\
               c343e797b87dbb63db1333ded9d1ece177cfa6b71fe8ab1da46624ed6415e51c\
               cde2c7ca86e283990eeaeb91120415528b2295910281b02dd431f4c9f70427df",
};

/// NIST CAVP Hash_DRBG.rsp (no_reseed), `[SHA-512]`, first group (no personalization string, no
/// additional input), COUNT = 0: tests/data/hash_drbg_no_reseed.rsp, line 8208 (group header at 8200).
const HASH_SHA512_GENERATE: NoReseedKat = NoReseedKat {
    entropy: "6b50a7d8f8a55d7a3df8bb40bcc3b722d8708de67fda010b03c4c84d72096f8c",
    nonce: "3ec649cc6256d9fa31db7a2904aaf025",
    returned: "95b7f17e9802d3577392c6a9c08083b67dd1292265b5f42d237f1c55bb9b10bf\
               cfd82c77a378b8266a0099143b3c2d64611eeeb69acdc055957c139e8b190c7a\
               06955f2c797c2778de940396a501f40e91396acf8d7e45ebdbb53bbf8c975230\
               d2f0ff9106c76119ae498e7fbc03d90f8e4c51627aed5c8d4263d5d2b978873a\
               0de596ee6dc7f7c29e37eee8b34c90dd1cf6a9ddb22b4cbd086b14b35de93da2\
               d5cb1806698cbd7bbb67bfe3d31fd2d1dbd2a1e058a3eb99d7e51f1a938eed5e\
               1c1de23a6b4345d3191409f92f39b3670d8dbfb635d8e6a36932d81033d1448d\
               63b403ddf88e121b6e819ac381226c1321e4b08644f6727c368c5a9f7a4b3ee2",
};

/// NIST CAVP HMAC_DRBG.rsp (no_reseed), `[SHA-256]`, first group (no personalization string, no
/// additional input), COUNT = 0: tests/data/hmac_drbg_no_reseed.rsp, line 4112 (group header at 4104).
const HMAC_SHA256_GENERATE: NoReseedKat = NoReseedKat {
    entropy: "ca851911349384bffe89de1cbdc46e6831e44d34a4fb935ee285dd14b71a7488",
    nonce: "659ba96c601dc69fc902940805ec0ca8",
    returned: "e528e9abf2dece54d47c7e75e5fe302149f817ea9fb4bee6f4199697d04d5b89\
               d54fbb978a15b5c443c9ec21036d2460b6f73ebad0dc2aba6e624abf07745bc1\
               07694bb7547bb0995f70de25d6b29e2d3011bb19d27676c07162c8b5ccde0668\
               961df86803482cb37ed6d5c0bb8d50cf1f50d476aa0458bdaba806f48be9dcb8",
};

/// NIST CAVP HMAC_DRBG.rsp (no_reseed), `[SHA-512]`, first group (no personalization string, no
/// additional input), COUNT = 0: tests/data/hmac_drbg_no_reseed.rsp, line 8208 (group header at 8200).
const HMAC_SHA512_GENERATE: NoReseedKat = NoReseedKat {
    entropy: "35049f389a33c0ecb1293238fd951f8ffd517dfde06041d32945b3e26914ba15",
    nonce: "f7328760be6168e6aa9fb54784989a11",
    returned: "e76491b0260aacfded01ad39fbf1a66a88284caa5123368a2ad9330ee48335e3\
               c9c9ba90e6cbc9429962d60c1a6661edcfaa31d972b8264b9d4562cf18494128\
               a092c17a8da6f3113e8a7edfcd4427082bd390675e9662408144971717303d8d\
               c352c9e8b95e7f35fa2ac9f549b292bc7c4bc7f01ee0a577859ef6e82d79ef23\
               892d167c140d22aac32b64ccdfeee2730528a38763b24227f91ac3ffe47fb115\
               38e435307e77481802b0f613f370ffb0dbeab774fe1efbb1a80d01154a9459e7\
               3ad361108bbc86b0914f095136cbe634555ce0bb263618dc5c367291ce082551\
               8987154fe9ecb052b3f0a256fcc30cc14572531c9628973639beda456f2bddf6",
};

// ---------- SP 800-90A: pr_false and pr_true ----------

/// NIST CAVP CTR_DRBG.rsp (pr_false), `[AES-128 use df]`, AdditionalInputLen = 128, no personalization
/// string: tests/data/ctr_drbg_pr_false.rsp, COUNT = 0 at line 174 (group header at 166).
const AES128_RESEED: ReseedKat = ReseedKat {
    entropy: "285da6cf762552634636bfee3400b156",
    nonce: "8f8bada74820cb43",
    entropy_reseed: "b4699b33354a83bfed115f770f32db0b",
    additional_reseed: "38bfec9a10e6e40c106841dae48dc3b8",
    additional: ["629ead5bacfac8235711ffeb22f57558", "dd8a02ee668ca3e03949b38cb6e6b4df"],
    returned: "e555aa4432bde04dcf0f0b03ead187b31df06653d444234b5c1bfc11b224285f\
               2fb2b6cdd5a9ae6f13d99bd02c3c9fe9c3c1be46a600f5f757ab4574af893501",
};

/// NIST CAVP CTR_DRBG.rsp (pr_true), `[AES-128 use df]`, AdditionalInputLen = 128, no personalization
/// string: tests/data/ctr_drbg_pr_true.rsp, COUNT = 0 at line 174 (group header at 166).
const AES128_PR: PrKat = PrKat {
    entropy: "8e83e0eb37ea3e535e176e77bdb15390",
    nonce: "fcdcc13c9a882294",
    entropy_pr: ["6a85e737c8f10431984fc87367d108f8", "d7a468e21274c3d9f1b705bcd4ba0458"],
    additional: ["a2d938cf8b29675b65626fe8ebb30176", "59631e818a14a8bba1b84125d07fcc43"],
    returned: "78d6a670ffd182f5a2887f6d3d8c39b1a8cb2c91ab147ebc95459f24b820ac21\
               23db72d7128d4895f3190c43c61945fc8bac4029730003455e12ff0cc1024182",
};

/// NIST CAVP CTR_DRBG.rsp (pr_false), `[AES-192 use df]`, AdditionalInputLen = 256, no personalization
/// string: tests/data/ctr_drbg_aes192_pr_false.rsp, COUNT = 0 at line 174 (group header at 166).
const AES192_RESEED: ReseedKat = ReseedKat {
    entropy: "3a09c9cc5e01f152ea2ed3021d49b4d6386aa6f04521ebde",
    nonce: "490bd4ee628cf9615035543e70fce4e2",
    entropy_reseed: "df06e5668d41a6fa7660aef477eff7a0ffc0542c1cd406d5",
    additional_reseed: "59b8c26626aab69e462752722f19450d12e2c0e959882d4d06ef4177e396855d",
    additional: [
        "28e57a9128e479985cce391e98127fd126f37ad0f317fd5f97b8c18e762f360b",
        "d488672b52e867816178369f542190685bbe8672720c1943d8a4378cc9b9dd0c",
    ],
    returned: "5c233e2850e4981bab0f6513a76ca2c9f9f97b89b7fedd3d9aaffecf305d89fd\
               5306cf24715895ad9ba7dac8c389fd87f95b4973003150871fa281e962f270cb",
};

/// NIST CAVP CTR_DRBG.rsp (pr_true), `[AES-192 use df]`, AdditionalInputLen = 256, no personalization
/// string: tests/data/ctr_drbg_aes192_pr_true.rsp, COUNT = 0 at line 174 (group header at 166).
const AES192_PR: PrKat = PrKat {
    entropy: "4c413753490a93cd43166fa3809deff61b632e2c22a7f974",
    nonce: "fd2a99c847ea9f9642d26dbf5499797d",
    entropy_pr: [
        "7da8daedbed66e45293e1a1c877a34348b534a4a25dec258",
        "37e87356ba1274acfa3b1eb654e596f5efdca52b4c333187",
    ],
    additional: [
        "f6368dbd19597ff25acf50c8655a74bf6ee06d6ec2b537183ad067ed4be0ae2a",
        "5b43a0413e3a075a7c3c7720c06b96461f66ac97ea4d13ef3661140886681668",
    ],
    returned: "7f7b6037b0f2a20c04e9eb28859bbab4e686a1e34d67ad43544ee3637bf11861\
               5a498a714a6f19ed453d78f39f9ea2ed2c3de6e22d76e328c396b2e1be63839b",
};

/// NIST CAVP CTR_DRBG.rsp (pr_false), `[AES-256 use df]`, AdditionalInputLen = 256, no personalization
/// string: tests/data/ctr_drbg_pr_false.rsp, COUNT = 0 at line 2702 (group header at 2694).
const AES256_RESEED: ReseedKat = ReseedKat {
    entropy: "6f60f0f9d486bc23e1223b934e61c0c78ae9232fa2e9a87c6dacd447c3f10e9e",
    nonce: "401e3f87762fa8a14ab232ccb8480a2f",
    entropy_reseed: "350be52552a65a804a106543ebb7dd046cffae104e4e8b2f18936d564d3c1950",
    additional_reseed: "7a3688adb1cfb6c03264e2762ece96bfe4daf9558fabf74d7fff203c08b4dd9f",
    additional: [
        "67cf4a56d081c53670f257c25557014cd5e8b0e919aa58f23d6861b10b00ea80",
        "648d4a229198b43f33dd7dd8426650be11c5656adcdf913bb3ee5eb49a2a3892",
    ],
    returned: "2d819fb9fee38bfc3f15a07ef0e183ff36db5d3184cea1d24e796ba103687415\
               abe6d9f2c59a11931439a3d14f45fc3f4345f331a0675a3477eaf7cd89107e37",
};

/// NIST CAVP CTR_DRBG.rsp (pr_true), `[AES-256 use df]`, AdditionalInputLen = 256, no personalization
/// string: tests/data/ctr_drbg_pr_true.rsp, COUNT = 0 at line 2702 (group header at 2694).
const AES256_PR: PrKat = PrKat {
    entropy: "a31337e0cbf2ee3e8d1d39324c978e714b5acc678920d5839fe95477ca3b8741",
    nonce: "a7f8b770a506acfc79b2c431660d310f",
    entropy_pr: [
        "c2e44d8b2c97f4c14e39c8137cc62818f1a223dde1dfe9def8672c2a6fab8c04",
        "923405e7878b3e203cb531f688c10725d7a55edacc2b9f195f7137080b278ea1",
    ],
    additional: [
        "5494597f0e8644d6028495c6599911cf30fc96a1b92a3a5dc862fecfc353c43d",
        "e7635b6f9e63c08942c4b5c86b5e60bbe3e89ea3809fb3939985c93eedd17f8d",
    ],
    returned: "5dbd55ed2f6d6c1749096b40f6a97d9cf42c0841b27ce0efd7433110d8118955\
               c8cefeb9db8e1c7961eb3f517f2047d27281261760a5e2b24535bb6f565bb971",
};

/// NIST CAVP Hash_DRBG.rsp (pr_false), `[SHA-256]`, AdditionalInputLen = 256, no personalization
/// string: tests/data/hash_drbg_pr_false.rsp, COUNT = 0 at line 5230 (group header at 5222).
const HASH_SHA256_RESEED: ReseedKat = ReseedKat {
    entropy: "9cfb7ad03be487a3b42be06e9ae44f283c2b1458cec801da2ae6532fcb56cc4c",
    nonce: "a20765538e8db31295747ec922c13a69",
    entropy_reseed: "96bc8014f90ebdf690db0e171b59cc46c75e2e9b8e1dc699c65c03ceb2f4d7dc",
    additional_reseed: "6fea0894052dab3c44d503950c7c72bd7b87de87cb81d3bb51c32a62f742286d",
    additional: [
        "d3467c78563b74c13db7af36c2a964820f2a9b1b167474906508fdac9b2049a6",
        "5840a11cc9ebf77b963854726a826370ffdb2fc2b3d8479e1df5dcfa3dddd10b",
    ],
    returned: "71c1154a2a7a3552413970bf698aa02f14f8ea95e861f801f463be27868b1b14\
               b1b4babd9eba5915a6414ab1104c8979b1918f3094925aeab0d07d2037e613b6\
               3cbd4f79d9f95c84b47ed9b77230a57515c211f48f4af6f5edb2c308b33905db\
               308cf88f552c8912c49b34e66c026e67b302ca65b187928a1aba9a49edbfe190",
};

/// NIST CAVP Hash_DRBG.rsp (pr_true), `[SHA-256]`, AdditionalInputLen = 256, no personalization
/// string: tests/data/hash_drbg_pr_true.rsp, COUNT = 0 at line 5230 (group header at 5222).
const HASH_SHA256_PR: PrKat = PrKat {
    entropy: "e6cb69220ef01bb23f8879a508be049ec7e8dacb898e2ddb75cef6bcc5a84a3f",
    nonce: "4429e3d890f2b6ef9a36f21286e9c885",
    entropy_pr: [
        "aaecb8f54221c7176e2dd941625bf84eb79e9c53c8d1a5569a33dcb4c198e627",
        "c72ef4489b151dbd6e8214887d3ddc48043e21a4ede40fe6f1ecbcd5f5641be5",
    ],
    additional: [
        "46f518eabcf170eae6ab571432269e874dff27a66f2c2f792a695b4f68678e3c",
        "0aabce2b5bafc3314db0605d85b80edf9561a0e2e8d4e408d53f551cea6a558b",
    ],
    returned: "8a5b386266528ee2d5e197f636748ea878508a1a0b805473f44cc60f8bddfc57\
               387dc958ac51b3fabf077b8939d21c9424a663c5b0873c7977ca2ce447699a9e\
               39e1ba5e51c6619127e9f18bb6abc2d1831d95bf34f4f81da6c79eda485944b4\
               f7043e4639f6bc8855c1c017cbed40e3bca2eac4c45ebfc69f7a8189e76f51c7",
};

/// NIST CAVP Hash_DRBG.rsp (pr_false), `[SHA-512]`, AdditionalInputLen = 256, no personalization
/// string: tests/data/hash_drbg_pr_false.rsp, COUNT = 0 at line 10286 (group header at 10278).
const HASH_SHA512_RESEED: ReseedKat = ReseedKat {
    entropy: "c73a7820f0f53e8bbfc3b7b71d994143cf6e98642e9ea6d8df5dccbc43db8720",
    nonce: "20cc9834b588adcb1bbde64f0d2a34cb",
    entropy_reseed: "12dd2aca8879046d23165c60f8aedc20415783e156d42a94346826aaeb02eacf",
    additional_reseed: "9b59ff78a34eabe0060c2792ca9b49e9781e6b802badf7dbde27caaed3343706",
    additional: [
        "dc74a9e480a6ff6f6bce53ab9c7bdde4b13d70fb5196cdd5e3a0555ccf06fe91",
        "8f3f229011209b2f399096afb054bccca6bc46aaee98845838fb1fb78b66f3bd",
    ],
    returned: "e6c96442582811ec90e587525f36c555e2fd6361a0c5b0284917a4fa6f6e8ace\
               83f11a1fb26cea6692b225ae7c5be286dd27471f323d7a2e4431722bb337b1ba\
               0e648ea2e9f0918b50e9111f2377636ba69b0e1cb5295078d76c549c8656940e\
               b15ca5aded7adc46e6fa4b86948f212fea3f3befdeece8b20e420ca84c760196\
               ddf0b074df0a9f097a5db8f6125800f5fe746a62df1208042f1255b524465a17\
               efcf6a537612968430e2adcff30f7407a51ed7305334384e512e003642cca175\
               636819f021c76a2f44e89e6fe39cf164477910379cd314f735c357f9379de224\
               95276b401c98ffb09a6dc03e484b355a9464511401eeaa05b4556e73b55227f8",
};

/// NIST CAVP Hash_DRBG.rsp (pr_true), `[SHA-512]`, AdditionalInputLen = 256, no personalization
/// string: tests/data/hash_drbg_pr_true.rsp, COUNT = 0 at line 10286 (group header at 10278).
const HASH_SHA512_PR: PrKat = PrKat {
    entropy: "7ba8431c16fb16d1121509f225abd5b37a25b0c5c069b7454c2266269cf26e1b",
    nonce: "7f04482b3a14d8fc7a29816a27ca66a2",
    entropy_pr: [
        "d05201365d2bccf9a65804b23bba82bfb65596d42fc51cc52922081d6e5074a2",
        "59185a07b20dec5857b79ddab28d46a52e4b0aad9df9cdb776133854aac0db3e",
    ],
    additional: [
        "64653b875359f3ab5d96aa494d44669022b48ca5c1c1f76a1814b7655199dbf3",
        "1e5004c4c2f850fa6be2e01710a4df0e576300ff4fc4de40e9c91358f26fd408",
    ],
    returned: "16232b5284ea1a8aadca65677908ba74c970ab6c346be4e6789625c5dc10e5ac\
               a1e6b853fe174bc116a0582ba7e07b20f698eabfb91c89ce5b87232636bef16e\
               5a966d0073d4e92a89735c397dbbdf80bcf9c310a5aec98ad077643ade1d8737\
               d408b788d90c6b538d10da0391d9ea87e74a7f8d0527b1d0edf760c69acfacca\
               dd29bc69b274cf08fd2a506d8d588b4deefc67a31aeb43831c096e3ca7066b43\
               45b26916d3c5f83182406b448cea0fb0d1c620d875a107a6d8d0d3b12eabb404\
               e80c8608e714ac43d6e962c97ef22e88c9ac662d484d24e2a8cf0398e09185e3\
               3680b12595e977623714b3f709b6fddc1861c53c4afdb3fdedf7dc4dcf5bb0e2",
};

/// NIST CAVP HMAC_DRBG.rsp (pr_false), `[SHA-256]`, AdditionalInputLen = 256, no personalization
/// string: tests/data/hmac_drbg_pr_false.rsp, COUNT = 0 at line 5230 (group header at 5222).
const HMAC_SHA256_RESEED: ReseedKat = ReseedKat {
    entropy: "05ac9fc4c62a02e3f90840da5616218c6de5743d66b8e0fbf833759c5928b53d",
    nonce: "2b89a17904922ed8f017a63044848545",
    entropy_reseed: "2791126b8b52ee1fd9392a0a13e0083bed4186dc649b739607ac70ec8dcecf9b",
    additional_reseed: "43bac13bae715092cf7eb280a2e10a962faf7233c41412f69bc74a35a584e54c",
    additional: [
        "3f2fed4b68d506ecefa21f3f5bb907beb0f17dbc30f6ffbba5e5861408c53a1e",
        "529030df50f410985fde068df82b935ec23d839cb4b269414c0ede6cffea5b68",
    ],
    returned: "02ddff5173da2fcffa10215b030d660d61179e61ecc22609b1151a75f1cbcbb4\
               363c3a89299b4b63aca5e581e73c860491010aa35de3337cc6c09ebec8c91a62\
               87586f3a74d9694b462d2720ea2e11bbd02af33adefb4a16e6b370fa0effd57d\
               607547bdcfbb7831f54de7073ad2a7da987a0016a82fa958779a168674b56524",
};

/// NIST CAVP HMAC_DRBG.rsp (pr_true), `[SHA-256]`, AdditionalInputLen = 256, no personalization
/// string: tests/data/hmac_drbg_pr_true.rsp, COUNT = 0 at line 5230 (group header at 5222).
const HMAC_SHA256_PR: PrKat = PrKat {
    entropy: "2cad88b2b6a06e703de46185ccb2ddcf5e0ee030995ebdf95cc4fbc38441f17f",
    nonce: "32310770e04172c0cf91f6590cce44a4",
    entropy_pr: [
        "448bfbc5ce9e3b9da3e9642daecd994dfe373e75253e8eb585141224eca7ad7b",
        "afb57f69799c0b892b3015990e133698d543aa87829ace868e4a5e9525d62357",
    ],
    additional: [
        "ef6da5e6530e0d621749ab192e06327e995c3ac0c3963ab8c8cd2df2839ab5df",
        "44278b31ed853f0a510bd14650ac4b4971d8b426799a43511d016be68dedbb8d",
    ],
    returned: "4c7dfbe509dc5a3ac26998723c6a44cad20b197fc86117c778d1568ab8289238\
               62885e97198f77a1cb45113f5d78726a0f120aec94afc45f57c8dcc1cb092b34\
               3480012858ef5bc559f57023442209326ec4a54d91ca3a77dfdf9e75f117cef5\
               0e6fd2dc9af6ddce8e6515b4a97357a97b6cd274f68a042fa41bbd7b7261b034",
};

/// NIST CAVP HMAC_DRBG.rsp (pr_false), `[SHA-512]`, AdditionalInputLen = 256, no personalization
/// string: tests/data/hmac_drbg_pr_false.rsp, COUNT = 0 at line 10286 (group header at 10278).
const HMAC_SHA512_RESEED: ReseedKat = ReseedKat {
    entropy: "4686a959e17dfb96c294b09c0f7a60efb386416cfb4c8972bcc55e44a151607a",
    nonce: "5226543b4c89321bbfb0f11f18ee3462",
    entropy_reseed: "5ef50daaf29929047870235c17762f5df5d9ab1af656e0e215fcc6fd9fc0d85d",
    additional_reseed: "d2383c3e528492269e6c3b3aaa2b54fbf48731f5aa52150ce7fc644679a5e7c6",
    additional: [
        "c841e7a2d9d13bdb8644cd7f5d91d241a369e12dc6c9c2be50d1ed29484bff98",
        "9054cf9216af66a788d3bf6757b8987e42d4e49b325e728dc645d5e107048245",
    ],
    returned: "b60d8803531b2b8583d17bdf3ac7c01f3c65cf9b069862b2d39b9024b34c172b\
               712db0704acb078a1ab1aec0390dbaee2dec9be7b234e63da481fd469a92c77b\
               c7bb2cfca586855520e0f9e9d47dcb9bdf2a2fdfa9f2b4342ef0ea582616b554\
               77717cfd516d46d6383257743656f7cf8b38402ba795a8c9d35a4aa88bec6233\
               13dad6ead689d152b54074f183b2fee556f554db343626cea853718f18d386bc\
               8bebb0c07b3c5e96ceb391ffceece88864dbd3be83a613562c5c417a24807d5f\
               9332974f045e79a9ade36994af6cf9bbeeb71d0025fcb4ad50f121cbc2df7cd1\
               2ff5a50cddfd9a4bbc6d942d743c8b8fbebe00eeccea3d14e07ff8454fa715da",
};

/// NIST CAVP HMAC_DRBG.rsp (pr_true), `[SHA-512]`, AdditionalInputLen = 256, no personalization
/// string: tests/data/hmac_drbg_pr_true.rsp, COUNT = 0 at line 10286 (group header at 10278).
const HMAC_SHA512_PR: PrKat = PrKat {
    entropy: "73afadfdf46ac9c528059ec5e4f940f120c19beda8d5b12ae692c1d3b1252675",
    nonce: "4ce532c291c8ce823aeaf923b3be8c43",
    entropy_pr: [
        "8d8b2a82162bce020237440d3445d4ef91793b983202b0f8532be2d78c34469d",
        "2c67fea05495feec67b76615967efa6f6bcde5bcf18285dd3d8f9b97b3463813",
    ],
    additional: [
        "7172619bf78c088c4f0d5b358f63cbcc019620c6ea9ffa31e040ec0d51665989",
        "a0670a6df2033cb19b082a3c83fd2eecddd9b9caebf3aed0b781ae9d4ac8bbe2",
    ],
    returned: "38ebc242f240569f792379afe393a76698fd07dc05d5c86d00791c1b9d1d79f1\
               80c4360fc8f2e5332a961198d7486750671e14d39a2b4852aede2ae9745484ca\
               05d7421191571d334cd714b9433ba026a058cab5619208f2e54f2d48286e49bd\
               0b528d05785beb4ff8953fe875cd2c92277494f2e315ab2790a1cd58f0222438\
               7470bd7edb3181d2b587e5c319a262c7806f8b75e59f2857871d8a182ba0366c\
               d3a968023c22582ec7bad2a204de0eba3d24566f213c1d88ca2b2ca8cafd8149\
               193949da885bd744323f31b39956fdea7bccb1d64d3f14afd03e1755962d9df1\
               f2507098455584358e951f7ff8619f1aab96e1481ede5289224053f603a98ae6",
};

// ---------- SP 800-90A: per mechanism ----------

/// CTR_DRBG AES-128.
pub(super) const AES128: MechanismKats =
    MechanismKats { no_reseed: AES128_GENERATE, reseed: AES128_RESEED, pr: AES128_PR };

/// CTR_DRBG AES-192.
pub(super) const AES192: MechanismKats =
    MechanismKats { no_reseed: AES192_GENERATE, reseed: AES192_RESEED, pr: AES192_PR };

/// CTR_DRBG AES-256.
pub(super) const AES256: MechanismKats =
    MechanismKats { no_reseed: AES256_GENERATE, reseed: AES256_RESEED, pr: AES256_PR };

/// Hash_DRBG SHA-256.
pub(super) const HASH_SHA256: MechanismKats =
    MechanismKats { no_reseed: HASH_SHA256_GENERATE, reseed: HASH_SHA256_RESEED, pr: HASH_SHA256_PR };

/// Hash_DRBG SHA-512.
pub(super) const HASH_SHA512: MechanismKats =
    MechanismKats { no_reseed: HASH_SHA512_GENERATE, reseed: HASH_SHA512_RESEED, pr: HASH_SHA512_PR };

/// HMAC_DRBG SHA-256.
pub(super) const HMAC_SHA256: MechanismKats =
    MechanismKats { no_reseed: HMAC_SHA256_GENERATE, reseed: HMAC_SHA256_RESEED, pr: HMAC_SHA256_PR };

/// HMAC_DRBG SHA-512.
pub(super) const HMAC_SHA512: MechanismKats =
    MechanismKats { no_reseed: HMAC_SHA512_GENERATE, reseed: HMAC_SHA512_RESEED, pr: HMAC_SHA512_PR };

// ---------- The other generators' primitives ----------

/// RFC 8439 appendix A.1 test vector #1: all-zero key and nonce, block 0.
pub(super) const CHACHA_A1_1: &str = "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7\
                                      da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586";

/// Official BLAKE3 test vectors: keyed_hash of the empty input under
/// "whats the Elvish word for friend" (first 32 bytes).
pub(super) const BLAKE3_KEYED_EMPTY: &str =
    "92b2b75604ed3c761f9d6f62392c8a9227ad0ea3f09573e783f1498a4ed60d26";
/// The key of [`BLAKE3_KEYED_EMPTY`].
pub(super) const BLAKE3_KEY: &[u8; 32] = b"whats the Elvish word for friend";

/// Abseil randen_test.cc: Generate on the all-zero state, first 32 bytes of the result.
pub(super) const RANDEN_ZERO_GENERATE: &str =
    "eed3e60e0934656cc633539d9b2b4e047739434e134fc1c3ee1004d97cf4a9dd";
