(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun E1_ () (_ BitVec 16))
(declare-fun E2_ () (_ BitVec 16))
(declare-fun GA_ () Bool)
(declare-fun GP_ () (_ BitVec 15))
(declare-fun GZ_ () Bool)
(declare-fun x0 () (_ BitVec 8))
(declare-fun x1 () (_ BitVec 8))
(assert
 (not (or (= (_ bv255 8) ((_ extract 7 0) ((_ extract 7 0) x0))) false)))
(assert
 (not (or (= (_ bv255 8) ((_ extract 7 0) ((_ extract 7 0) x1))) false)))
(assert
 (bvslt GP_ (_ bv4096 15)))
(assert
 (bvsgt GP_ (_ bv28672 15)))
(assert
 (let (($x50 (= GP_ (_ bv0 15))))
 (=> GZ_ $x50)))
(assert
 (let (($x58 (bvsle E1_ (_ bv254 16))))
 (and (bvsge E1_ (_ bv65397 16)) $x58)))
(assert
 (let (($x63 (bvsle E2_ (_ bv254 16))))
 (and (bvsge E2_ (_ bv65397 16)) $x63)))
(assert
 (let ((?x75 (bvadd ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x0))) (_ bv127 11))) ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x1))) (_ bv127 11))))))
 (let ((?x76 ((_ sign_extend 3) ?x75)))
 (bvsle (ite (or (or GZ_ false) false) (_ bv65397 16) ?x76) E1_))))
(assert
 (bvslt E1_ E2_))
(assert
 (let ((?x147 ((_ zero_extend 40) (bvsub E2_ E1_))))
(let ((?x75 (bvadd ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x0))) (_ bv127 11))) ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x1))) (_ bv127 11))))))
(let ((?x76 ((_ sign_extend 3) ?x75)))
(let ((?x133 (bvsub E1_ ?x76)))
(let ((?x137 ((_ zero_extend 35) (bvadd (ite (bvsgt (_ bv0 16) ?x133) (_ bv0 16) ?x133) (_ bv0 16)))))
(let ((?x114 ((_ zero_extend 17) (ite true (_ bv1 1) (_ bv0 1)))))
(let ((?x116 (bvmul ((_ zero_extend 3) (ite (bvslt GP_ (_ bv0 15)) (bvneg GP_) GP_)) (bvmul ?x114 ?x114))))
(let ((?x119 (bvshl ((_ zero_extend 33) ?x116) (_ bv33 51))))
(let ((?x141 ((_ zero_extend 5) (bvlshr ?x119 (ite (bvugt ?x137 (_ bv51 51)) (_ bv51 51) ?x137)))))
(let (($x104 (ite (= (_ bv0 15) GP_) GA_ (bvsgt (_ bv0 15) GP_))))
(let (($x105 (ite false true $x104)))
(let (($x106 (ite false false $x105)))
(let ((?x143 (ite $x106 (bvsub (_ bv0 56) ?x141) ?x141)))
(let ((?x151 (ite (bvslt ?x143 (_ bv0 56)) (bvneg (bvlshr (bvneg ?x143) ?x147)) (bvlshr ?x143 ?x147))))
(let ((?x124 (bvadd (ite (bvsgt (_ bv0 16) (bvsub E2_ ?x76)) (_ bv0 16) (bvsub E2_ ?x76)) (_ bv0 16))))
(let ((?x125 ((_ zero_extend 35) ?x124)))
(let ((?x130 ((_ zero_extend 5) (bvlshr ?x119 (ite (bvugt ?x125 (_ bv51 51)) (_ bv51 51) ?x125)))))
(not (= (ite $x106 (bvsub (_ bv0 56) ?x130) ?x130) ?x151))))))))))))))))))))
(check-sat)
